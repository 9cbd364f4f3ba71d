"""Several models' long-context runs side by side on paired items, and the divide-and-conquer headline.

    python -m evals.longctx --compare qwen0.5b=runs/q05/rows.csv qwen1.5b=runs/q15/rows.csv \\
        --headline qwen0.5b:workers_manager qwen1.5b --out DIR [--score strict|substring]

Each LABEL=ROWS_CSV names the per-item rows.csv of one `python -m evals.longctx` run and the model it ran.
Several files under one label pool into one model's rows (a KV run and a QA run, or a run and its
continuation); where two rows of a label share (suite, item, length, mode, topology) the last one given is kept.

Pairing: an item is (suite, length, item index in the run's question list), so the runs compared must have asked
the same questions in the same order (the same --kv-lengths, --kv-items, --kv-questions, --qa-lengths,
--qa-items, --depth and --interleave: see each run's run.json). A paired item whose text token count differs
between two models is refused, as the sign that they did not. At each suite and length only the items that
every (model, mode) measured there answered count, so every cell is the same questions; the rest are counted as
dropped.

Writes in DIR:
- compare.csv / compare.md: per suite, length, model and mode (single_shot or a chunked topology): n, correct,
  accuracy, 95% Wilson interval, and the cost per question (mean prompt and completion tokens, LLM calls, wall s).
- compare.png: accuracy against length, one line per (model, mode), Wilson intervals as error bars.
- with --headline WEAK:TOPOLOGY STRONG: headline.csv and a section of compare.md: per length, the weak model
  chunked with TOPOLOGY against the strong model single-shot on the items both answered, their difference, an
  exact two-sided McNemar test on the discordant pairs, and the verdict: the weak model overtakes at a length
  when its accuracy is higher and McNemar p < 0.05; "overtakes from N tokens" when it does so at N and at
  every longer measured length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.longctx.rows import read_rows, wilson_interval
from tools.errors import InvalidInput, NotFound

SINGLE = "single_shot"
ALPHA = 0.05
HINT_SPEC = "Write each run as LABEL=ROWS_CSV, e.g. qwen0.5b=runs/q05/rows.csv."


def parse_spec(spec: str) -> tuple[str, Path]:
    """`LABEL=ROWS_CSV` as (label, path); the path must be a file."""
    label, sep, path = spec.partition("=")
    label, path = label.strip(), path.strip()
    if not sep or not label or not path:
        raise InvalidInput(f"--compare {spec!r} is not LABEL=ROWS_CSV.", hint=HINT_SPEC)
    if not Path(path).is_file():
        raise NotFound(f"--compare {label}: no such file {path}.",
                       hint="Give the rows.csv a `python -m evals.longctx` run wrote in its --out folder.")
    return label, Path(path)


def mode_of(row: dict[str, Any]) -> str:
    """A row's mode as the comparison names it: its chunked topology, or single_shot."""
    return row["topology"] if row["mode"] == "chunked" else SINGLE


def load_runs(specs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each label's rows (in the order the labels are first given), pooled over its files, the last duplicate kept."""
    pooled: dict[str, dict[tuple[str, int, int, str, str], dict[str, Any]]] = {}
    for spec in specs:
        label, path = parse_spec(spec)
        try:
            rows = read_rows(path)
        except InvalidInput:
            raise
        except (KeyError, ValueError) as exc:
            raise InvalidInput(f"{path} is not a rows.csv of `python -m evals.longctx` ({type(exc).__name__}: {exc}).",
                               hint="Give the per-item rows.csv of a run, not its results.csv.") from exc
        if any("item" not in r for r in rows):
            raise InvalidInput(f"{path} has rows without an item index, so its items cannot be paired.",
                               hint="Compare rows.csv files of runs that wrote the item column (current runs do).")
        keep = pooled.setdefault(label, {})
        for r in rows:
            keep[(r["suite"], r["item"], r["length"], r["mode"], r.get("topology", ""))] = r
    return {label: list(rows.values()) for label, rows in pooled.items()}


def outcome(row: dict[str, Any], score: str) -> int:
    """1 when the row's answer is right under `score` (strict, or substring), else 0."""
    return int(row.get("strict", row["correct"]) if score == "strict" else row["correct"])


def _mode_order(mode: str) -> tuple[int, str]:
    return (0, "") if mode == SINGLE else (1, mode)


def _index(runs: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, int], dict[tuple[str, str], dict[int, Any]]]:
    """(suite, length) -> (model, mode) -> item -> row."""
    by: dict[tuple[str, int], dict[tuple[str, str], dict[int, Any]]] = {}
    for label, rows in runs.items():
        for r in rows:
            by.setdefault((r["suite"], r["length"]), {}).setdefault((label, mode_of(r)), {})[r["item"]] = r
    return by


def _check_same_items(suite: str, length: int, cells: dict[tuple[str, str], dict[int, Any]], items: set[int]) -> None:
    for item in sorted(items):
        tokens = {(model, r[item]["tokens"]) for (model, _), r in cells.items()}
        if len({t for _, t in tokens}) > 1:
            seen = ", ".join(f"{m}: {t}" for m, t in sorted(tokens))
            raise InvalidInput(f"{suite} item {item} at length {length} has different text token counts ({seen}): "
                               "the runs did not ask the same questions under the same item index.",
                               hint="Compare runs made with the same item settings (kv/qa lengths, items, questions, "
                               "depth, interleave; see each run.json).")


def _cost(rows: list[dict[str, Any]], key: str) -> float | None:
    return sum(float(r.get(key, 0) or 0) for r in rows) / len(rows) if rows else None


def _cell(suite: str, length: int, model: str, mode: str, rows: list[dict[str, Any]], score: str,
          dropped: int, unpaired: int) -> dict[str, Any]:
    n = len(rows)
    k = sum(outcome(r, score) for r in rows)
    low, high = wilson_interval(k, n)
    return {"suite": suite, "length": length,
            "tokens": round(sum(r["tokens"] for r in rows) / n) if n else None,
            "model": model, "mode": mode, "n": n, "correct": k, "accuracy": k / n if n else None,
            "ci_low": low if n else None, "ci_high": high if n else None,
            "mean_prompt_tokens": _cost(rows, "prompt_tokens"),
            "mean_completion_tokens": _cost(rows, "completion_tokens"),
            "mean_calls": _cost(rows, "calls"), "mean_wall_s": _cost(rows, "wall_s"),
            "items_dropped": dropped, "rows_unpaired": unpaired}


def compare_cells(runs: dict[str, list[dict[str, Any]]], score: str = "strict") -> list[dict[str, Any]]:
    """One row per suite, length, model and mode on the items paired at that suite and length.

    `items_dropped`: items some (model, mode) measured at that suite and length but not every one did (the same
    for each cell there); `rows_unpaired`: this cell's rows left out for that reason.
    """
    order = {label: i for i, label in enumerate(runs)}
    out = []
    for (suite, length), cells in sorted(_index(runs).items()):
        paired = set.intersection(*(set(items) for items in cells.values()))
        every = set.union(*(set(items) for items in cells.values()))
        _check_same_items(suite, length, cells, paired)
        for model, mode in sorted(cells, key=lambda c: (order[c[0]], _mode_order(c[1]))):
            items = cells[(model, mode)]
            rows = [items[i] for i in sorted(paired)]
            out.append(_cell(suite, length, model, mode, rows, score, len(every - paired), len(items) - len(paired)))
    return out


def parse_headline(headline: list[str], runs: dict[str, list[dict[str, Any]]]) -> tuple[str, str, str]:
    """`[WEAK_LABEL:TOPOLOGY, STRONG_LABEL]` checked against the runs: (weak label, topology, strong label)."""
    weak_spec, strong = headline
    weak, sep, topology = weak_spec.rpartition(":")
    labels = ", ".join(runs)
    if not sep or not weak or not topology:
        raise InvalidInput(f"--headline {weak_spec!r} is not WEAK_LABEL:TOPOLOGY.",
                           hint="E.g. --headline qwen0.5b:workers_manager qwen1.5b (the strong side is single-shot).")
    for label in (weak, strong):
        if label not in runs:
            raise InvalidInput(f"--headline label {label!r} is not among the --compare labels ({labels}).",
                               hint="Name labels given as LABEL=ROWS_CSV to --compare.")
    topologies = sorted({r["topology"] for r in runs[weak] if r["mode"] == "chunked"})
    if topology not in topologies:
        raise InvalidInput(f"--headline: {weak} has no rows chunked with topology {topology!r} "
                           f"(its chunked topologies: {', '.join(topologies) or 'none'}).",
                           hint="Name a topology the weak model's run measured (--topology of that run).")
    if not any(r["mode"] == SINGLE for r in runs[strong]):
        raise InvalidInput(f"--headline: {strong} has no single-shot rows.",
                           hint="Give the strong model's run that measured single-shot (run without --no-single-shot).")
    return weak, topology, strong


def mcnemar_p(weak_only: int, strong_only: int) -> float:
    """Exact two-sided McNemar p-value: the discordant pairs against Binomial(weak_only + strong_only, 1/2)."""
    from scipy.stats import binomtest

    n = weak_only + strong_only
    return 1.0 if n == 0 else float(binomtest(weak_only, n, 0.5, alternative="two-sided").pvalue)


def headline_rows(runs: dict[str, list[dict[str, Any]]], weak: str, topology: str, strong: str,
                  score: str = "strict") -> list[dict[str, Any]]:
    """Per suite and length that both sides measured: the weak model chunked with `topology` against the strong
    model single-shot on the items both answered, with the exact McNemar test of their discordant pairs."""
    out = []
    for (suite, length), cells in sorted(_index(runs).items()):
        a, b = cells.get((weak, topology), {}), cells.get((strong, SINGLE), {})
        items = sorted(set(a) & set(b))
        if not items:
            continue
        _check_same_items(suite, length, {(weak, topology): a, (strong, SINGLE): b}, set(items))
        wa = [outcome(a[i], score) for i in items]
        sa = [outcome(b[i], score) for i in items]
        weak_only = sum(w and not s for w, s in zip(wa, sa, strict=True))
        strong_only = sum(s and not w for w, s in zip(wa, sa, strict=True))
        n = len(items)
        p = mcnemar_p(weak_only, strong_only)
        diff = (sum(wa) - sum(sa)) / n
        out.append({"suite": suite, "length": length, "n": n, "weak_correct": sum(wa), "weak_accuracy": sum(wa) / n,
                    "strong_correct": sum(sa), "strong_accuracy": sum(sa) / n, "difference": diff,
                    "weak_only": weak_only, "strong_only": strong_only, "mcnemar_p": p,
                    "higher": diff > 0, "overtakes": diff > 0 and p < ALPHA})
    return out


def _lengths(ls: list[int]) -> str:
    return ", ".join(str(x) for x in ls)


def verdict(rows: list[dict[str, Any]]) -> str:
    """The sentence the numbers of one suite's headline rows support (rows sorted by length)."""
    if not rows:
        return "no length was measured by both sides, so there is nothing to compare"
    lengths = [r["length"] for r in rows]
    over = [r["length"] for r in rows if r["overtakes"]]
    merely = [r["length"] for r in rows if r["higher"] and not r["overtakes"]]
    tail = (f"; it is merely higher (McNemar p >= {ALPHA}) at {_lengths(merely)} tokens" if merely else "")
    if not over:
        if not merely:
            tail = "; it is not higher at any measured length"
        return "the weaker model with chunking does not overtake at any measured length" + tail
    p_at = {r["length"]: r["mcnemar_p"] for r in rows}
    sustained = [x for x in lengths if all(y in over for y in lengths if y >= x)]
    if sustained:
        start = sustained[0]
        earlier = [x for x in over if x < start]
        also = f"; it also overtakes at {_lengths(earlier)} tokens" if earlier else ""
        return (f"the weaker model with chunking overtakes from {start} tokens (McNemar p = {p_at[start]:.3g} there, "
                f"p < {ALPHA} at every longer measured length){also}{tail}")
    after = [x for x in lengths if x > over[0] and x not in over]
    return (f"the weaker model with chunking overtakes at {_lengths(over)} tokens but not from any length on "
            f"(not at {_lengths(after)} tokens){tail}")


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def markdown(cells: list[dict[str, Any]], score: str, labels: list[str],
             headline: tuple[str, str, str, list[dict[str, Any]]] | None) -> str:
    """compare.md: the paired table, the dropped items, and the headline section when asked."""
    dropped = {(c["suite"], c["length"]): c["items_dropped"] for c in cells}
    total = sum(dropped.values())
    lines = [f"# Long-context runs compared: {', '.join(labels)} (score: {score})", "",
             "Paired cells: at each suite and length only the items that every (model, mode) listed there answered "
             f"count, so each row is the same questions; {total} item(s) dropped for lack of pairing. Cost columns are "
             "means per question.", "",
             "| suite | length | text tokens | model | mode | n (paired) | correct | accuracy | 95% Wilson | "
             "prompt tokens | completion tokens | calls | wall s | dropped |", "|" + "---|" * 14]
    for c in cells:
        ci = f"[{c['ci_low']:.2f}, {c['ci_high']:.2f}]" if c["n"] else "n/a"
        acc = f"{c['accuracy']:.1%}" if c["n"] else "n/a"
        lines.append(f"| {c['suite']} | {c['length']:,} | {_fmt(c['tokens'])} | {c['model']} | {c['mode']} | "
                     f"{c['n']} | {c['correct']}/{c['n']} | {acc} | {ci} | {_fmt(c['mean_prompt_tokens'], 0)} | "
                     f"{_fmt(c['mean_completion_tokens'], 0)} | {_fmt(c['mean_calls'])} | {_fmt(c['mean_wall_s'])} | "
                     f"{c['items_dropped']} |")
    if total:
        per_length = [f"{s} {length}: {d} item(s)" for (s, length), d in sorted(dropped.items()) if d]
        lines += ["", "Dropped for lack of pairing: " + "; ".join(per_length) + "."]
    if headline:
        weak, topology, strong, rows = headline
        lines += ["", f"## Headline: {weak} chunked ({topology}) against {strong} single-shot", "",
                  "On the items both answered at each length; McNemar: exact two-sided binomial test of the discordant "
                  f"pairs (weak right and strong wrong against the reverse); overtakes = higher and p < {ALPHA}.", "",
                  f"| suite | length | n | {weak} {topology} | {strong} single-shot | difference | weak only right | "
                  "strong only right | McNemar p | overtakes |", "|" + "---|" * 10]
        for r in rows:
            lines.append(f"| {r['suite']} | {r['length']:,} | {r['n']} | {r['weak_correct']}/{r['n']} "
                         f"({r['weak_accuracy']:.1%}) | {r['strong_correct']}/{r['n']} ({r['strong_accuracy']:.1%}) | "
                         f"{r['difference']:+.1%} | {r['weak_only']} | {r['strong_only']} | {r['mcnemar_p']:.3g} | "
                         f"{'yes' if r['overtakes'] else 'higher, n.s.' if r['higher'] else 'no'} |")
        lines.append("")
        for suite in sorted({r["suite"] for r in rows}) or ["(no suite)"]:
            lines.append(f"- {suite}: {verdict([r for r in rows if r['suite'] == suite])}.")
    return "\n".join(lines) + "\n"


def plot(cells: list[dict[str, Any]], path: Path, score: str) -> None:
    """Accuracy against length per (model, mode), one panel per suite, 95% Wilson intervals as error bars; a model
    keeps one colour, a mode one line style, and lines sit a little apart so equal values stay visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tools.atomic import atomic_output

    suites = sorted({c["suite"] for c in cells})
    models = list(dict.fromkeys(c["model"] for c in cells))
    modes = sorted({c["mode"] for c in cells}, key=_mode_order)
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-")]
    fig, axes = plt.subplots(1, len(suites), figsize=(6.4 * len(suites), 4.4), squeeze=False)
    for ax, suite in zip(axes[0], suites, strict=True):
        lines = [(m, mode) for m in models for mode in modes
                 if any(c["suite"] == suite and c["model"] == m and c["mode"] == mode and c["n"] for c in cells)]
        for j, (model, mode) in enumerate(lines):
            pts = sorted((c["length"], c["accuracy"], c["ci_low"], c["ci_high"]) for c in cells
                         if c["suite"] == suite and c["model"] == model and c["mode"] == mode and c["n"])
            shift = 1.0 + 0.03 * (j - (len(lines) - 1) / 2)
            marker, style = styles[modes.index(mode) % len(styles)]
            err = [[max(0.0, p[1] - p[2]) for p in pts], [max(0.0, p[3] - p[1]) for p in pts]]
            ax.errorbar([p[0] * shift for p in pts], [p[1] for p in pts], yerr=err, marker=marker, linestyle=style,
                        capsize=3, color=f"C{models.index(model) % 10}", label=f"{model} {mode}")
        ax.set_xscale("log")
        measured = sorted({c["length"] for c in cells if c["suite"] == suite})
        ax.set_xticks(measured, [f"{x:,}" for x in measured])
        ax.minorticks_off()
        ax.set_xlabel("text length (tokens)")
        ax.set_ylabel(f"accuracy ({score}), 95% Wilson interval")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{suite}: paired items", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


def run_compare(specs: list[str], out: Path, score: str = "strict", headline: list[str] | None = None) -> int:
    """Load, pair, tabulate, test and plot; write compare.csv, compare.md, compare.png (and headline.csv)."""
    from evals.rows import write_rows_csv
    from tools.atomic import write_text

    runs = load_runs(specs)
    parsed = parse_headline(headline, runs) if headline else None
    cells = compare_cells(runs, score)
    head = None
    if parsed:
        head = (*parsed, headline_rows(runs, *parsed, score=score))
    out.mkdir(parents=True, exist_ok=True)
    write_rows_csv(out / "compare.csv", cells)
    text = markdown(cells, score, list(runs), head)
    write_text(out / "compare.md", text)
    plot(cells, out / "compare.png", score)
    written = [out / "compare.csv", out / "compare.md", out / "compare.png"]
    if head and head[3]:
        write_rows_csv(out / "headline.csv", head[3])
        written.append(out / "headline.csv")
    print(text, end="")
    print(f"wrote {', '.join(map(str, written))}")
    return 0
