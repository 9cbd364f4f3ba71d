"""The embedded model keeps the key/value cache of a prompt's head (system text, tool list) for the next prompts
that start with the same tokens: the same greedy text as a full prefill, fewer tokens prefilled."""

from __future__ import annotations

import pytest

from tests.test_nid_scorers import _tiny_causal_lm
from tools.embedded import runtime
from tools.embedded.chat import prompt_head, render_prompt
from tools.embedded.runtime import LocalLM

# Longer than the tiny model's 8-token sliding window, so the split prefill crosses a window boundary.
HEAD = "id: cafe 0123 dead beef 4567 face\n\n"


def _lm() -> LocalLM:
    model, tok = _tiny_causal_lm()
    return LocalLM(model, tok)


def test_a_repeated_head_is_reused_and_changes_nothing() -> None:
    lm = _lm()
    prompts = [HEAD + f"da: {x}\nd:" for x in ("12 ab", "ff 07", "ab 12")]
    plain = [lm.generate(p, max_tokens=12) for p in prompts]
    assert all(g.cached_tokens == 0 for g in plain)
    first, *rest = (lm.generate(p, max_tokens=12, head_chars=len(HEAD)) for p in prompts)
    assert first.cached_tokens == 0  # prefilled now, kept for the others
    n_head = len(lm.tokenizer(HEAD, add_special_tokens=True).input_ids)
    assert n_head > 8 and all(g.cached_tokens == n_head for g in rest)
    for got, want in zip([first, *rest], plain, strict=True):
        assert (got.text, got.prompt_tokens, got.completion_tokens) == (want.text, want.prompt_tokens,
                                                                        want.completion_tokens)


def test_another_head_or_a_short_one_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    lm = _lm()
    lm.generate(HEAD + "da: 1\nd:", max_tokens=2, head_chars=len(HEAD))
    other = HEAD.replace("cafe", "face")
    assert lm.generate(other + "da: 1\nd:", max_tokens=2, head_chars=len(other)).cached_tokens == 0
    assert lm.generate("id: c\n\nda: 1\nd:", max_tokens=2, head_chars=7).cached_tokens == 0  # under HEAD_MIN_TOKENS
    monkeypatch.setattr(runtime, "HEADS_KEPT", 2)
    heads = [HEAD.replace("0123", f"012{i}") for i in range(3)]
    for h in heads:
        lm.generate(h + "da: 1\nd:", max_tokens=1, head_chars=len(h))
    assert lm.generate(heads[0] + "da: 2\nd:", max_tokens=1, head_chars=len(heads[0])).cached_tokens == 0  # evicted
    assert lm.generate(heads[2] + "da: 2\nd:", max_tokens=1, head_chars=len(heads[2])).cached_tokens > 0


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
