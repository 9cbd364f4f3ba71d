"""The embedded model keeps the key/value caches of prompt starts that later prompts repeat (a marked head: system
text, tool list; or the start shared with a recent prompt: a document asked again): the same greedy text as a full
prefill, fewer tokens prefilled, within a byte budget."""

from __future__ import annotations

import pytest

from tests.test_nid_scorers import _tiny_causal_lm
from tools.embedded.chat import prompt_head, render_prompt
from tools.embedded.prefixes import MIN_TOKENS, cache_nbytes
from tools.embedded.runtime import LocalLM
from tools.errors import Cancelled

# Longer than the tiny model's 8-token sliding window, so the split prefill crosses a window boundary.
HEAD = "id: cafe 0123 dead beef 4567 face\n\n"


def _lm(prefix_cache_mb: int = 64) -> LocalLM:
    model, tok = _tiny_causal_lm()
    return LocalLM(model, tok, prefix_cache_mb)


def test_a_repeated_head_is_reused_and_changes_nothing() -> None:
    lm = _lm()
    prompts = [HEAD + f"da: {x}\nd:" for x in ("12 ab", "ff 07", "ab 12")]
    plain = [_lm(0).generate(p, max_tokens=12) for p in prompts]
    assert all(g.cached_tokens == 0 for g in plain)
    first, *rest = (lm.generate(p, max_tokens=12, head_chars=len(HEAD)) for p in prompts)
    assert first.cached_tokens == 0  # prefilled now, kept for the others
    n_head = len(lm.tokenizer(HEAD, add_special_tokens=True).input_ids)
    assert n_head > 8 and all(g.cached_tokens == n_head for g in rest)
    for got, want in zip([first, *rest], plain, strict=True):
        assert (got.text, got.prompt_tokens, got.completion_tokens) == (want.text, want.prompt_tokens,
                                                                        want.completion_tokens)


def test_another_head_or_a_short_one_is_not_reused() -> None:
    lm = _lm()
    lm.generate(HEAD + "da: 1\nd:", max_tokens=2, head_chars=len(HEAD))
    other = HEAD.replace("id: cafe", "face: id")  # differs in its first tokens: nothing in common worth keeping
    assert lm.generate(other + "da: 1\nd:", max_tokens=2, head_chars=len(other)).cached_tokens == 0
    short = lm.generate("id: c\n\nda: 1\nd:", max_tokens=2, head_chars=7)  # under MIN_TOKENS
    assert short.cached_tokens == 0 and len(lm.prefixes) == 2


def test_the_least_recently_used_prefix_goes_when_the_budget_is_full() -> None:
    lm = _lm()
    heads = [HEAD.replace("id: cafe", f"{i}d: cafe") for i in range(3)]  # no start shared across heads
    lm.generate(heads[0] + "da: 1\nd:", max_tokens=1, head_chars=len(heads[0]))
    one = lm.prefixes.nbytes
    assert one > 0
    lm.prefixes.max_bytes = 2 * one + one // 2  # room for two heads
    for h in heads[1:]:
        lm.generate(h + "da: 1\nd:", max_tokens=1, head_chars=len(h))
    assert len(lm.prefixes) == 2 and lm.prefixes.nbytes <= lm.prefixes.max_bytes
    assert lm.generate(heads[0] + "da: 2\nd:", max_tokens=1, head_chars=len(heads[0])).cached_tokens == 0  # evicted
    assert lm.generate(heads[2] + "da: 2\nd:", max_tokens=1, head_chars=len(heads[2])).cached_tokens > 0


def test_a_document_asked_again_is_read_once_from_the_third_question_on() -> None:
    """No head is marked: the second prompt finds the start it shares with the first and keeps it; later prompts
    continue from it. Answers equal those of a model that keeps nothing."""
    doc = "data: " + " ".join(f"{i:02x}=cafe{i:02d}" for i in range(12)) + "\n"  # far longer than the window
    prompts = [doc + f"ask: {k:02x}\nd:" for k in (3, 7, 11, 3)]
    plain = [_lm(0).generate(p, max_tokens=10) for p in prompts]
    lm = _lm()
    got = [lm.generate(p, max_tokens=10) for p in prompts]
    shared = len(lm.tokenizer(doc + "ask: ", add_special_tokens=True).input_ids)
    assert shared - MIN_TOKENS > 8
    assert [g.cached_tokens for g in got[:2]] == [0, 0]
    assert got[2].cached_tokens >= shared - 1 and got[3].cached_tokens >= shared - 1
    assert [(g.text, g.prompt_tokens, g.completion_tokens) for g in got] == [
        (g.text, g.prompt_tokens, g.completion_tokens) for g in plain]


def test_a_kept_prefix_holds_only_its_window_and_a_cancel_stops_its_prefill() -> None:
    lm = _lm()
    long_doc = "data: " + " ".join(f"{i:02x}=ce" for i in range(24)) + "\n"
    for k in (1, 2):
        lm.generate(long_doc + f"ask: {k}\nd:", max_tokens=1)
    (entry,) = lm.prefixes._entries.values()
    n = len(entry.ids)
    sliding, full = entry.cache.layers  # the tiny model: one sliding-window layer (8), one full layer
    assert sliding.keys.shape[-2] < 8 and full.keys.shape[-2] == n
    assert cache_nbytes(entry.cache) == 2 * 4 * 16 * (sliding.keys.shape[-2] + n)  # keys + values, float32, dim 16
    with pytest.raises(Cancelled):
        _lm().generate(HEAD + "da: 1\nd:", max_tokens=4, head_chars=len(HEAD), should_stop=lambda: True)


def test_chat_prompts_start_with_their_head() -> None:
    tools = [{"type": "function", "function": {"name": "graph_solve", "description": "Solve a graph task.",
                                               "parameters": {"properties": {"task": {"type": "string"}},
                                                              "required": ["task"]}}}]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Diameter of a 5-cycle?"}]
    head = prompt_head(messages, tools)
    assert head and render_prompt(messages, tools).startswith(head)
    assert "graph_solve(task: string)" in head and "Diameter" not in head
    step2 = [*messages, {"role": "assistant", "content": "2"}, {"role": "user", "content": "And a 6-cycle?"}]
    assert prompt_head(step2, tools) == head and render_prompt(step2, tools).startswith(head)
    assert prompt_head([{"role": "user", "content": "Hi"}]) == ""


def test_a_long_prompt_is_prefilled_in_pieces_and_the_second_question_reuses_most_of_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.embedded import runtime

    monkeypatch.setattr(runtime, "PREFILL_TOKENS", 32)  # longer than the 8-token window: pieces cross it
    doc = "data: " + " ".join(f"{i:02x}=cafe{i:02d}" for i in range(12)) + "\n"
    prompts = [doc + f"ask: {k:02x}\nd:" for k in (3, 7, 11)]
    plain = [_lm(0).generate(p, max_tokens=10) for p in prompts]
    lm = _lm()
    got = [lm.generate(p, max_tokens=10) for p in prompts]
    shared = len(lm.tokenizer(doc + "ask: ", add_special_tokens=True).input_ids)
    assert got[0].cached_tokens == 0
    assert shared - 32 <= got[1].cached_tokens <= shared  # a piece boundary of the first prompt
    assert shared - 32 <= got[2].cached_tokens <= shared  # (a start under MIN_TOKENS past a kept one is not kept)
    assert [(g.text, g.prompt_tokens, g.completion_tokens) for g in got] == [
        (g.text, g.prompt_tokens, g.completion_tokens) for g in plain]
    calls = []

    def stop_after_two() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        _lm().generate(doc + "ask: 01\nd:", max_tokens=4, should_stop=stop_after_two)
    assert len(calls) == 3  # two pieces ran, the third was not started
