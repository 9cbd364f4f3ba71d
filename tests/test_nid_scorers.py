"""Membership scores and the three scorers: the project's byte LM, a completions endpoint, Hugging Face paths."""

from __future__ import annotations

import json
import math
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from tools.errors import InvalidInput
from tools.nid.bytelm import ByteLMConfig
from tools.nid.contexts import Context, make_context
from tools.nid.scorers import ByteLMScorer, CompletionsScorer, open_model
from tools.nid.scores import TokenStats, membership_scores
from tools.nid.train import TrainConfig, train_byte_lm


def test_scores_by_hand() -> None:
    lp = np.log(np.array([0.5, 0.1, 0.9, 0.25, 0.8]))
    stats = TokenStats(lp, np.full(5, -1.0), np.full(5, 0.5), np.log(np.array([0.3, 0.6, 0.05, 0.5, 0.1])))
    ident = "abcde"
    s = membership_scores(stats, ident, k=0.4, with_prefix=TokenStats(lp - 0.1, lp, lp, lp))
    assert s["loss"] == pytest.approx(np.mean(lp))
    assert s["zlib"] == pytest.approx(np.sum(lp) / len(zlib.compress(b"abcde")))
    assert s["min_k"] == pytest.approx((math.log(0.1) + math.log(0.25)) / 2)  # 2 lowest of 5
    z = (lp + 1.0) / 0.5
    assert s["min_k_pp"] == pytest.approx(np.mean(np.sort(z)[:2]))
    assert s["hinge"] == pytest.approx(np.mean(lp - np.log([0.3, 0.6, 0.05, 0.5, 0.1])))
    assert s["recall"] == pytest.approx(np.mean(lp - 0.1) / np.mean(lp))
    assert math.isnan(membership_scores(stats, ident)["recall"])


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    torch.set_num_threads(1)
    texts = [f"id {i}: {hashlib_hex(i)} ok" for i in range(24)]
    cfg = TrainConfig(epochs=2, batch_size=8, model=ByteLMConfig(block_size=64, d_model=16, n_layer=1, n_head=4))
    return train_byte_lm(texts, tmp_path_factory.mktemp("m") / "tiny.pt", cfg).checkpoint


def hashlib_hex(i: int) -> str:
    import hashlib

    return hashlib.md5(str(i).encode()).hexdigest()


def test_byte_lm_batched_equals_single_and_direct(tiny_model: Path) -> None:
    import torch

    sc = open_model(tiny_model)
    assert isinstance(sc, ByteLMScorer)
    ctxs = [make_context(f"id {i}: {hashlib_hex(i)} ok, é", 7, 39, prefix_chars=5 + i % 4) for i in range(9)]
    batched = sc.token_stats(ctxs, batch_size=4)
    single = [sc.token_stats([c], batch_size=1)[0] for c in ctxs]
    for b, s in zip(batched, single, strict=True):
        assert len(b) == 32
        np.testing.assert_allclose(b.logp, s.logp, atol=1e-5)
        np.testing.assert_allclose(b.mu, s.mu, atol=1e-5)
    # direct: log-softmax of a plain forward pass over [BOS] + bytes
    ctx = ctxs[3]
    data = list(ctx.text.encode("utf-8"))
    with torch.inference_mode():
        logits = sc.model(torch.tensor([[256, *data[:-1]]]))
    lsm = torch.log_softmax(logits[0], -1)
    start = len(ctx.text[: ctx.start].encode())
    want = [float(lsm[t, data[t]]) for t in range(start, start + 32)]
    np.testing.assert_allclose(batched[3].logp, want, atol=1e-5)
    probs = lsm.exp()
    mu = [float((probs[t] * lsm[t]).sum()) for t in range(start, start + 32)]
    np.testing.assert_allclose(batched[3].mu, mu, atol=1e-4)


def test_shared_prefix_pass_equals_plain_forward(tiny_model: Path) -> None:
    """An NID and its GIDs share the bytes before the identifier; that prefix is computed once."""
    from tools.nid.pipeline import candidate_set

    sc = open_model(tiny_model)
    sets = [candidate_set(f"id {i}: {hashlib_hex(i)} ok", 7, 39, "md5", 5) for i in range(3)]
    sets.append(candidate_set("x serialVersionUID = 1234567890123456789L;", 21, 41, "serial_version_uid", 5))
    ctxs = [c for s in sets for c in s.contexts(16, 4)]
    plain = [sc.token_stats([c], batch_size=1)[0] for c in ctxs]
    # batch 4: one prefix a call; batch 64: the three md5 groups (equal lengths) share one call
    for batch in (4, 64):
        grouped = sc.token_stats(ctxs, batch_size=batch)
        for g, p in zip(grouped, plain, strict=True):
            assert len(g) == len(p) > 0
            for field in ("logp", "mu", "max_other"):
                np.testing.assert_allclose(getattr(g, field), getattr(p, field), atol=1e-5)
            # sigma is a square root of a float32 difference of sums: its rounding is larger
            np.testing.assert_allclose(g.sigma, p.sigma, atol=1e-4)


class _Completions:
    """A scripted OpenAI-compatible /v1/completions server: one token per character, echo with logprobs.

    The log-probability of character ch is -(ord(ch) % 7) / 4 - 0.1; top-2 alternatives are 'x' and 'y'.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []

    def __enter__(self) -> _Completions:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append(body)
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
                choices = []
                for i, p in enumerate(prompts):
                    toks = [*list(p), "!"]
                    lps = [None] + [-(ord(ch) % 7) / 4 - 0.1 for ch in toks[1:]]
                    tops = [None] + [{ch: lp, "x": -0.05 if ch != "x" else -0.5, "y": -3.0}
                                     for ch, lp in zip(toks[1:], lps[1:], strict=True)]
                    choices.append({"index": i, "text": p + "!", "finish_reason": "length", "logprobs": {
                        "tokens": toks, "token_logprobs": lps, "top_logprobs": tops,
                        "text_offset": list(range(len(toks)))}})
                data = json.dumps({"id": "cmpl-1", "object": "text_completion", "created": 0,
                                   "model": body["model"], "choices": choices}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def completions() -> Iterator[_Completions]:
    with _Completions() as srv:
        yield srv


def test_completions_scorer(completions: _Completions) -> None:
    sc = CompletionsScorer(completions.base_url, "scripted", max_retries=0)
    ctxs = [Context("key=abc12 end", 4, 9), Context("zz=Q9x!", 3, 6), Context("k: abc12", 3, 8)]
    stats = sc.token_stats(ctxs, batch_size=2)
    assert len(completions.requests) == 2 and completions.requests[0]["echo"] is True
    assert len(completions.requests[0]["prompt"]) == 2
    for ctx, st in zip(ctxs, stats, strict=True):
        ident = ctx.identifier
        want = np.array([-(ord(ch) % 7) / 4 - 0.1 for ch in ident])
        np.testing.assert_allclose(st.logp, want)
        # best other token: 'x' (-0.05) unless the token is 'x' itself, then 'y' (-3.0)
        np.testing.assert_allclose(st.max_other, [-3.0 if ch == "x" else -0.05 for ch in ident])
        ch = ident[0]
        vals = np.array([want[0], -0.05 if ch != "x" else -0.5, -3.0]) if ch not in "xy" else None
        if vals is not None:
            p = np.exp(vals) / np.exp(vals).sum()
            assert st.mu[0] == pytest.approx(float(np.sum(p * vals)))
    # same identifier, same prefix-free scores in two contexts
    np.testing.assert_allclose(stats[0].logp, stats[2].logp)


def test_model_paths_that_are_not_causal_lms(tmp_path: Path) -> None:
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    with pytest.raises(InvalidInput, match="not a causal language model"):
        open_model(txt)
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"], "model_type": "bert"}))
    with pytest.raises(InvalidInput, match=r"not a causal language model.*BertForMaskedLM"):
        open_model(bert)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInput, match=r"without config\.json"):
        open_model(empty)


SECRET = "sk-server-secret-0123456789"


def _configure(monkeypatch: pytest.MonkeyPatch, base_url: str, allowed: list[str]) -> None:
    from tools.settings import reload_settings

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("RESEARCH_MCP_ALLOWED_ENDPOINTS", json.dumps(allowed))
    reload_settings()


def test_caller_endpoint_is_refused_unless_allowed_and_never_gets_the_key(
        completions: _Completions, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.errors import AccessDenied
    from tools.nid.score_tool import nid_score

    text = "md5 0d75e4c42f8c76d59b84cf3b3ac0420b here"
    # the server is configured for another endpoint; the caller names the listener on 127.0.0.1
    _configure(monkeypatch, "http://127.0.0.1:9/v1", [])
    with pytest.raises(AccessDenied, match="RESEARCH_MCP_ALLOWED_ENDPOINTS"):
        nid_score(endpoint=completions.base_url, endpoint_model="scripted", text=text, n_gids=2, recall=False)
    assert completions.requests == []  # refused before any request
    _configure(monkeypatch, "http://127.0.0.1:9/v1", [completions.base_url])
    nid_score(endpoint=completions.base_url, endpoint_model="scripted", text=text, n_gids=2, recall=False)
    assert completions.headers and all(SECRET not in v for h in completions.headers for v in h.values())
    # the configured endpoint itself (endpoint='settings') does get the key: the check above can see one
    _configure(monkeypatch, completions.base_url, [])
    nid_score(endpoint="settings", endpoint_model="scripted", text=text, n_gids=2, recall=False)
    assert completions.headers[-1]["authorization"] == f"Bearer {SECRET}"


def test_nid_score_through_an_endpoint(completions: _Completions, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.nid.score_tool import nid_score

    _configure(monkeypatch, "http://127.0.0.1:9/v1", [completions.base_url])
    text = "token 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed and md5 0d75e4c42f8c76d59b84cf3b3ac0420b here"
    r = nid_score(endpoint=completions.base_url, endpoint_model="scripted", text=text, n_gids=3, recall=False)
    assert r.scorer == "endpoint:scripted" and r.n_nids == 2 and r.candidates_per_nid == 4
    assert completions.requests[0]["model"] == "scripted"
    with np.load(r.scores_path) as z:
        feats = z["features"]
    # loss of the NID equals the scripted per-character log-probabilities' mean
    want = np.mean([-(ord(ch) % 7) / 4 - 0.1 for ch in "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"])
    assert feats[0, 0, 0] == pytest.approx(want)


def _tiny_causal_lm(softcap: float | None = None):
    """A randomly initialised two-layer Gemma 3 with a character-level fast tokenizer (no download)."""
    import torch
    from tokenizers import Tokenizer, models, processors
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    chars = sorted(set("0123456789abcdefABCDEFxX:;=/.-_ \nidokcmtsLuerv"))
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    # a few merged tokens, so identifier tokens may also cover context characters
    for extra in ("ab", "12", " 0", "d:"):
        vocab[extra] = len(vocab)
    core = Tokenizer(models.WordPiece(vocab, unk_token="<unk>", max_input_chars_per_word=1000,
                                      continuing_subword_prefix=""))
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                  unk_token="<unk>")
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=8,
                           layer_types=["sliding_attention", "full_attention"], max_position_embeddings=256,
                           final_logit_softcapping=softcap)
    return Gemma3ForCausalLM(cfg).eval(), tok


@pytest.mark.parametrize("softcap", [None, 2.0])
def test_transformers_scorer_equals_a_plain_forward_pass(softcap: float | None) -> None:
    """Shared prefix caches, truncation after the identifier and head-only-where-needed change nothing
    (also with a soft-capped output head, as Gemma 2 has)."""
    import torch

    from tools.nid.pipeline import candidate_set
    from tools.nid.scorers import HFScorer, _stats_from_logprobs

    model, tok = _tiny_causal_lm(softcap)
    sc = HFScorer(model, tok, "tiny")
    sets = [candidate_set(f"id d: {hashlib_hex(i)} ok; x", 6, 38, "md5", 5) for i in range(3)]
    ctxs = [c for s in sets for c in s.contexts(16, 4)] + [Context("ab12 cafe0 end", 5, 10)]
    batched = sc.token_stats(ctxs, batch_size=4)
    for ctx, got in zip(ctxs, batched, strict=True):
        enc = tok(ctx.text, return_offsets_mapping=True, return_tensors="pt")
        offs = enc.pop("offset_mapping")[0]
        ids = enc["input_ids"][0]
        keep = [t for t in range(1, len(ids)) if offs[t, 0] < ctx.end and offs[t, 1] > ctx.start]
        assert len(keep) == len(got) > 0
        with torch.inference_mode():
            lsm = torch.log_softmax(model(input_ids=enc["input_ids"]).logits[0].float(), -1)
        sel = torch.tensor(keep)
        want = _stats_from_logprobs(lsm[sel - 1], ids[sel])
        for field in ("logp", "mu", "sigma", "max_other"):
            np.testing.assert_allclose(getattr(got, field), getattr(want, field), atol=1e-4)
