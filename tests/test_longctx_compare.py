"""`python -m evals.longctx --compare`: two models' hand-made rows.csv files whose paired outcomes are known."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from scipy.stats import binomtest

from evals.longctx.compare import verdict
from evals.longctx.run import main

COLUMNS = ["item", "suite", "length", "tokens", "mode", "topology", "chunk_tokens", "correct", "strict", "chunks",
           "failed_chunks", "calls", "prompt_tokens", "completion_tokens", "wall_s", "answer"]
Z = 1.959963984540054  # the 0.975 quantile of the standard normal

# Per length, the weak model chunked (workers_manager) against the strong one single-shot, as counts of items:
# (both right, weak only right, strong only right, both wrong).
OVERTAKES = {1000: (10, 0, 8, 2), 2000: (10, 2, 1, 7), 4000: (5, 11, 0, 4), 8000: (3, 12, 1, 4)}
NEVER = {1000: (15, 1, 3, 1), 4000: (8, 3, 1, 8), 8000: (5, 2, 6, 7)}


def _row(item: int, length: int, mode: str, topology: str, strict: int, **cost: float) -> dict[str, object]:
    chunked = mode == "chunked"
    return {"item": item, "suite": "kv", "length": length, "tokens": length - 8, "mode": mode, "topology": topology,
            "chunk_tokens": 900 if chunked else "", "correct": 1, "strict": strict, "chunks": length // 1000 + 1,
            "failed_chunks": 0, "calls": cost.get("calls", length // 1000 + 2 if chunked else 1),
            "prompt_tokens": cost.get("prompt_tokens", 1000 + item), "completion_tokens": cost.get("completion", 20),
            "wall_s": cost.get("wall_s", 2.0), "answer": "x"}


def _models(design: dict[int, tuple[int, int, int, int]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Weak rows (workers_manager, and single-shot wrong on every item) and strong rows (single-shot), item by item."""
    weak, strong = [], []
    item = 0
    for length, (both, weak_only, strong_only, neither) in design.items():
        outcomes = [(1, 1)] * both + [(1, 0)] * weak_only + [(0, 1)] * strong_only + [(0, 0)] * neither
        for w, s in outcomes:
            weak.append(_row(item, length, "chunked", "workers_manager", w, wall_s=3.0 + item % 2))
            weak.append(_row(item, length, "single_shot", "", 0))
            strong.append(_row(item, length, "single_shot", "", s, prompt_tokens=length, wall_s=5.0))
            item += 1
    return weak, strong


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _overtaking_runs(tmp_path: Path) -> tuple[list[Path], Path]:
    """The weak model's rows in two files (1K-2K, then 4K-8K and an item only it answered), the first holding a stale
    duplicate that the second replaces; the strong model's rows in one file."""
    weak, strong = _models(OVERTAKES)
    extra = max(int(r["item"]) for r in weak) + 1
    weak += [_row(extra, 4000, "chunked", "workers_manager", 1), _row(extra, 4000, "single_shot", "", 1)]
    first = [r for r in weak if r["length"] <= 2000]
    later = [r for r in weak if r["length"] > 2000]
    stale = dict(next(r for r in later if r["mode"] == "chunked" and r["length"] == 4000), strict=0, wall_s=99.0)
    files = [_write(tmp_path / "weak_a.csv", [*first, stale]), _write(tmp_path / "weak_b.csv", later)]
    return files, _write(tmp_path / "strong.csv", strong)


def _cell(rows: list[dict[str, str]], length: int, model: str, mode: str) -> dict[str, str]:
    return next(r for r in rows if int(r["length"]) == length and r["model"] == model and r["mode"] == mode)


def test_cells_are_paired_counts_with_wilson_intervals_and_cost_per_question(tmp_path: Path) -> None:
    (weak_a, weak_b), strong = _overtaking_runs(tmp_path)
    out = tmp_path / "cmp"
    assert main(["--compare", f"q05={weak_a}", f"q05={weak_b}", f"q15={strong}", "--out", str(out)]) == 0
    rows = _csv(out / "compare.csv")
    assert len(rows) == 4 * 3  # 4 lengths x (q05 single_shot, q05 workers_manager, q15 single_shot)
    for length, (both, weak_only, strong_only, _) in OVERTAKES.items():
        for model, mode, k in (("q05", "workers_manager", both + weak_only), ("q15", "single_shot", both + strong_only),
                               ("q05", "single_shot", 0)):
            c = _cell(rows, length, model, mode)
            assert int(c["n"]) == 20 and int(c["correct"]) == k
            assert float(c["accuracy"]) == pytest.approx(k / 20)
            p = k / 20
            centre = (p + Z * Z / 40) / (1 + Z * Z / 20)
            half = Z * math.sqrt(p * (1 - p) / 20 + Z * Z / 1600) / (1 + Z * Z / 20)
            assert float(c["ci_low"]) == pytest.approx(max(0.0, centre - half), abs=1e-9)
            assert float(c["ci_high"]) == pytest.approx(min(1.0, centre + half), abs=1e-9)
    # the item only q05 answered at 4000 is dropped from every cell there, and counted
    assert {int(_cell(rows, 4000, m, mode)["items_dropped"]) for m, mode in
            (("q05", "workers_manager"), ("q05", "single_shot"), ("q15", "single_shot"))} == {1}
    assert int(_cell(rows, 4000, "q05", "workers_manager")["rows_unpaired"]) == 1
    assert int(_cell(rows, 4000, "q15", "single_shot")["rows_unpaired"]) == 0
    assert int(_cell(rows, 8000, "q05", "workers_manager")["items_dropped"]) == 0
    # cost per question: items 40-59 are the paired ones at 4000 (prompt tokens 1000 + item, wall 3 s or 4 s)
    wm = _cell(rows, 4000, "q05", "workers_manager")
    assert float(wm["mean_prompt_tokens"]) == pytest.approx(1000 + sum(range(40, 60)) / 20)
    assert float(wm["mean_wall_s"]) == pytest.approx(3.5)  # the stale 99 s duplicate was replaced
    assert float(wm["mean_calls"]) == 6 and float(wm["mean_completion_tokens"]) == 20
    assert float(_cell(rows, 4000, "q15", "single_shot")["mean_prompt_tokens"]) == 4000
    table = (out / "compare.md").read_text()
    assert "Paired cells" in table and "1 item(s) dropped for lack of pairing" in table
    assert "| kv | 4,000 | 3,992 | q05 | workers_manager | 20 | 16/20 | 80.0% |" in table
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "headline.csv").exists()


def test_headline_finds_the_weak_chunked_model_overtakes_from_4000_tokens(tmp_path: Path) -> None:
    (weak_a, weak_b), strong = _overtaking_runs(tmp_path)
    out = tmp_path / "cmp"
    assert main(["--compare", f"q05={weak_a}", f"q05={weak_b}", f"q15={strong}",
                 "--headline", "q05:workers_manager", "q15", "--out", str(out)]) == 0
    head = {int(r["length"]): r for r in _csv(out / "headline.csv")}
    assert sorted(head) == [1000, 2000, 4000, 8000]
    for length, (both, weak_only, strong_only, _) in OVERTAKES.items():
        r = head[length]
        assert int(r["n"]) == 20 and int(r["weak_only"]) == weak_only and int(r["strong_only"]) == strong_only
        assert float(r["weak_accuracy"]) == pytest.approx((both + weak_only) / 20)
        assert float(r["strong_accuracy"]) == pytest.approx((both + strong_only) / 20)
        assert float(r["difference"]) == pytest.approx((weak_only - strong_only) / 20)
        ref = binomtest(weak_only, weak_only + strong_only, 0.5).pvalue
        assert float(r["mcnemar_p"]) == pytest.approx(ref, rel=1e-12)
    assert float(head[4000]["mcnemar_p"]) == pytest.approx(2 * 0.5 ** 11) and head[4000]["overtakes"] == "True"
    assert head[2000]["higher"] == "True" and head[2000]["overtakes"] == "False"  # 2 against 1: p = 1
    assert head[1000]["higher"] == "False"
    text = (out / "compare.md").read_text()
    assert "the weaker model with chunking overtakes from 4000 tokens" in text
    assert "merely higher (McNemar p >= 0.05) at 2000 tokens" in text
    assert "does not overtake" not in text


def test_headline_says_the_weak_model_never_overtakes_when_no_length_is_significant(tmp_path: Path) -> None:
    weak, strong = _models(NEVER)
    out = tmp_path / "cmp"
    assert main(["--compare", f"small={_write(tmp_path / 'w.csv', weak)}", f"big={_write(tmp_path / 's.csv', strong)}",
                 "--headline", "small:workers_manager", "big", "--out", str(out)]) == 0
    head = {int(r["length"]): r for r in _csv(out / "headline.csv")}
    assert float(head[4000]["mcnemar_p"]) == pytest.approx(binomtest(3, 4, 0.5).pvalue)
    assert [r["overtakes"] for r in head.values()] == ["False"] * 3
    text = (out / "compare.md").read_text()
    assert ("the weaker model with chunking does not overtake at any measured length; it is merely higher "
            "(McNemar p >= 0.05) at 4000 tokens") in text
    assert "overtakes from" not in text
    # by substring every answer here is right: no discordant pair, nothing higher
    sub = tmp_path / "sub"
    assert main(["--compare", f"small={tmp_path / 'w.csv'}", f"big={tmp_path / 's.csv'}", "--score", "substring",
                 "--headline", "small:workers_manager", "big", "--out", str(sub)]) == 0
    assert {r["mcnemar_p"] for r in _csv(sub / "headline.csv")} == {"1.0"}
    assert "does not overtake at any measured length; it is not higher at any measured length" in (
        sub / "compare.md").read_text()


def test_verdict_names_overtaking_that_does_not_hold_at_longer_lengths() -> None:
    def r(length: int, diff: float, p: float) -> dict[str, object]:
        return {"length": length, "higher": diff > 0, "overtakes": diff > 0 and p < 0.05, "mcnemar_p": p}

    gap = [r(1000, 0.3, 0.01), r(2000, -0.1, 0.5), r(4000, 0.4, 0.001), r(8000, 0.5, 0.002)]
    assert verdict(gap).startswith("the weaker model with chunking overtakes from 4000 tokens (McNemar p = 0.001")
    assert "also overtakes at 1000 tokens" in verdict(gap)
    fades = [r(1000, 0.0, 1.0), r(4000, 0.4, 0.001), r(8000, 0.1, 0.4)]
    assert verdict(fades) == ("the weaker model with chunking overtakes at 4000 tokens but not from any length on "
                              "(not at 8000 tokens); it is merely higher (McNemar p >= 0.05) at 8000 tokens")


def test_compare_errors_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (weak_a, _), strong = _overtaking_runs(tmp_path)
    out = ["--out", str(tmp_path / "cmp")]
    cases = [
        (["--compare", f"q05={tmp_path / 'nope.csv'}"], "no such file"),
        (["--compare", str(weak_a)], "is not LABEL=ROWS_CSV"),
        (["--compare", f"q05={weak_a}", f"q15={strong}", "--headline", "q05:workers_manager", "q7"],
         "'q7' is not among the --compare labels (q05, q15)"),
        (["--compare", f"q05={weak_a}", f"q15={strong}", "--headline", "q05:chain", "q15"],
         "q05 has no rows chunked with topology 'chain' (its chunked topologies: workers_manager)"),
        (["--compare", f"q05={weak_a}", f"q15={strong}", "--headline", "q05", "q15"], "is not WEAK_LABEL:TOPOLOGY"),
    ]
    for argv, message in cases:
        assert main([*argv, *out]) == 2
        assert message in capsys.readouterr().out
    # the same item index over texts of other lengths: the runs asked other questions
    _, strong_rows = _models(OVERTAKES)
    other = _write(tmp_path / "other.csv", [dict(r, tokens=int(r["tokens"]) + 5) for r in strong_rows])
    assert main(["--compare", f"q05={weak_a}", f"q15={other}", *out]) == 2
    assert "different text token counts" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["--headline", "q05:workers_manager", "q15", *out])
    assert exc.value.code == 2 and "--headline needs --compare" in capsys.readouterr().err
