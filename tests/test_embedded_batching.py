"""Concurrent generations on the embedded model decode together (one forward pass a token) and each gets the
text it gets alone: rows of different lengths (across the sliding window), rows that join a running batch,
rows that end early, a cancelled row, a request that fails."""

from __future__ import annotations

import threading
import time

import pytest

from tests.test_nid_scorers import _tiny_causal_lm
from tools.embedded.batching import DecodeBatcher
from tools.embedded.runtime import LocalLM
from tools.errors import Cancelled, LimitExceeded

# the tiny model's sliding window is 8 tokens: these prompts are shorter and longer than it
PROMPTS = ["x", "id: cafe", "12 ab ff 07 d:", "id: cafe 0123 dead beef 4567 face da:",
           "id: cafe 0123 dead beef 4567 face da: 12 ab ff 07 d: 0123 4567 89ab cdef"]


@pytest.fixture(scope="module")
def tiny():
    return _tiny_causal_lm()


def _alone(tiny, prompt: str, **opts):
    return LocalLM(*tiny, prefix_cache_mb=0).generate(prompt, **opts)


def test_a_batch_gives_each_row_its_own_text_in_fewer_passes(tiny) -> None:
    lengths = [20, 3, 20, 11, 20]
    want = [_alone(tiny, p, max_tokens=n) for p, n in zip(PROMPTS, lengths, strict=True)]
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0), max_batch=8)
    got = [f.result(timeout=60) for f in [batcher.submit(p, max_tokens=n) for p, n in zip(PROMPTS, lengths,
                                                                                          strict=True)]]
    for g, w in zip(got, want, strict=True):
        assert (g.text, g.completion_tokens, g.prompt_tokens, g.finish_reason) == (
            w.text, w.completion_tokens, w.prompt_tokens, w.finish_reason)
    # the first token of each row comes from its prefill; the rest from shared passes
    assert batcher.row_steps == sum(lengths) - len(lengths)
    assert batcher.steps < batcher.row_steps


def test_stop_strings_and_max_tokens_end_rows_as_alone(tiny) -> None:
    opts = [{"max_tokens": 16, "stop": [" b"]}, {"max_tokens": 0}, {"max_tokens": 1}, {"max_tokens": 16, "stop": ["F"]}]
    prompts = PROMPTS[:4]
    want = [_alone(tiny, p, **o) for p, o in zip(prompts, opts, strict=True)]
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0))
    got = [f.result(timeout=60) for f in [batcher.submit(p, **o) for p, o in zip(prompts, opts, strict=True)]]
    assert [(g.text, g.finish_reason) for g in got] == [(w.text, w.finish_reason) for w in want]
    assert got[1].completion_tokens == 0 and got[2].completion_tokens == 1


def test_a_row_that_joins_a_running_batch_gets_its_own_text(tiny) -> None:
    want_long = _alone(tiny, PROMPTS[0], max_tokens=60)
    want_late = _alone(tiny, PROMPTS[4], max_tokens=10)
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0))
    first = batcher.submit(PROMPTS[0], max_tokens=60)
    while batcher.steps < 5:
        time.sleep(0.001)
    late = batcher.submit(PROMPTS[4], max_tokens=10)  # longer than the running row: the batch is re-padded
    assert late.result(timeout=60).text == want_late.text
    assert first.result(timeout=60).text == want_long.text


def test_a_cancelled_row_stops_and_the_others_go_on(tiny) -> None:
    want = _alone(tiny, PROMPTS[2], max_tokens=40)
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0))
    flag = threading.Event()
    doomed = batcher.submit(PROMPTS[3], max_tokens=200, should_stop=flag.is_set)
    other = batcher.submit(PROMPTS[2], max_tokens=40)
    while batcher.steps < 3:
        time.sleep(0.001)
    flag.set()
    with pytest.raises(Cancelled):
        doomed.result(timeout=5)
    assert other.result(timeout=60).text == want.text


def test_a_bad_request_fails_alone_and_the_model_keeps_serving(tiny) -> None:
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0))
    too_long = batcher.submit("1" * 300, max_tokens=4)  # the tiny model's context is 256 tokens
    fine = batcher.submit(PROMPTS[1], max_tokens=6)
    with pytest.raises(LimitExceeded):
        too_long.result(timeout=60)
    assert fine.result(timeout=60).text == _alone(tiny, PROMPTS[1], max_tokens=6).text
    assert batcher.run(lambda a, b: a + b, 2, 3) == 5


def test_max_batch_one_serves_one_row_at_a_time(tiny) -> None:
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=0), max_batch=1)
    got = [f.result(timeout=60) for f in [batcher.submit(p, max_tokens=8) for p in PROMPTS[:3]]]
    assert [g.text for g in got] == [_alone(tiny, p, max_tokens=8).text for p in PROMPTS[:3]]
    assert batcher.steps == batcher.row_steps == 3 * 7


def test_kept_prefixes_and_batching_together_change_nothing(tiny) -> None:
    head = "id: cafe 0123 dead beef 4567 face\n\n"
    prompts = [head + q for q in ("da: 12 ab", "d: ff 07", "da: ab 12 x")]
    want = [_alone(tiny, p, max_tokens=12) for p in prompts]
    batcher = DecodeBatcher(LocalLM(*tiny, prefix_cache_mb=64))
    got = [f.result(timeout=60) for f in [batcher.submit(p, max_tokens=12, head_chars=len(head)) for p in prompts]]
    assert [g.text for g in got] == [w.text for w in want]
    assert got[0].cached_tokens == 0 and all(g.cached_tokens > 8 for g in got[1:])
