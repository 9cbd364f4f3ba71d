"""Time-series trends: least-squares slope, Mann-Kendall test with the tie correction, Sen's slope.

Per pixel (vectorised over a block of pixels, NaN = missing date) and for one series. Mann (1945),
Kendall (1975): S = sum_{i<j} sign(y_j - y_i); Var(S) = [n(n-1)(2n+5) - sum_t t(t-1)(2t+5)]/18 over tie
groups t; Z = (S - sign(S))/sqrt(Var S); two-sided p = 2(1 - Phi(|Z|)). Sen (1968): median of the pairwise
slopes (y_j - y_i)/(t_j - t_i).
"""

from __future__ import annotations

import math
from datetime import date, datetime

import numpy as np

from tools.errors import InvalidInput


def decimal_years(times: list[str | float]) -> np.ndarray:
    """ISO dates ('2020-07-01') or numbers (decimal years) as decimal years."""
    out = []
    for t in times:
        if isinstance(t, (int, float)):
            out.append(float(t))
            continue
        try:
            d = datetime.fromisoformat(str(t).strip().replace("Z", "+00:00"))
        except ValueError:
            try:
                out.append(float(str(t)))
                continue
            except ValueError as exc:
                raise InvalidInput(f"{t!r} is not a date.",
                                   hint="Give ISO dates (2020-07-01) or decimal years.") from exc
        start = date(d.year, 1, 1).toordinal()
        length = date(d.year + 1, 1, 1).toordinal() - start
        frac = (d.toordinal() - start + (d.hour * 3600 + d.minute * 60 + d.second) / 86400.0) / length
        out.append(d.year + frac)
    arr = np.asarray(out, dtype=np.float64)
    if len(np.unique(arr)) != len(arr):
        raise InvalidInput("Two rasters have the same date.", hint="Give one raster per distinct date.")
    return arr


def ols_slope(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope per row of y (pixels x dates), NaN-aware; NaN with fewer than 3 valid dates."""
    ok = np.isfinite(y)
    n = ok.sum(axis=1)
    tt = np.where(ok, t[None, :], 0.0)
    yy = np.where(ok, y, 0.0)
    st, sy = tt.sum(axis=1), yy.sum(axis=1)
    stt, sty = (tt * tt).sum(axis=1), (tt * yy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (n * sty - st * sy) / (n * stt - st * st)
    slope[n < 3] = np.nan
    return slope


def mann_kendall(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(S, Var(S) with ties, Z, two-sided p) per row of y (pixels x dates, in time order), NaN-aware."""
    from scipy.special import ndtr

    p, n = y.shape
    s = np.zeros(p)
    for i in range(n - 1):
        d = y[:, i + 1:] - y[:, i: i + 1]
        with np.errstate(invalid="ignore"):
            s += np.nansum(np.sign(d), axis=1)
    ok = np.isfinite(y)
    m = ok.sum(axis=1).astype(np.float64)
    var = m * (m - 1) * (2 * m + 5)
    ys = np.sort(y, axis=1)  # NaN last
    run = np.ones(p)
    for i in range(1, n):
        same = (ys[:, i] == ys[:, i - 1]) & np.isfinite(ys[:, i])
        ended = ~same
        var -= np.where(ended, run * (run - 1) * (2 * run + 5), 0.0)
        run = np.where(same, run + 1, 1.0)
    var -= run * (run - 1) * (2 * run + 5)
    var /= 18.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(s > 0, (s - 1) / np.sqrt(var), np.where(s < 0, (s + 1) / np.sqrt(var), 0.0))
    z[(m < 3) | ~(var > 0)] = np.nan
    pval = 2.0 * (1.0 - ndtr(np.abs(z)))
    s[m < 3] = np.nan
    return s, var, z, pval


def sen_slope(t: np.ndarray, y: np.ndarray, max_elements: int = 20_000_000) -> np.ndarray:
    """Median pairwise slope per row of y, NaN-aware, processed in chunks of rows to bound memory."""
    p, n = y.shape
    i, j = np.triu_indices(n, k=1)
    dt = t[j] - t[i]
    out = np.full(p, np.nan)
    step = max(1, max_elements // max(1, len(i)))
    for a in range(0, p, step):
        yy = y[a: a + step]
        slopes = (yy[:, j] - yy[:, i]) / dt[None, :]
        has = np.isfinite(slopes).sum(axis=1) > 0
        if has.any():
            with np.errstate(all="ignore"):
                out[a: a + step][has] = np.nanmedian(slopes[has], axis=1)
    valid = np.isfinite(y).sum(axis=1)
    out[valid < 3] = np.nan
    return out


def series_trend(t: np.ndarray, y: np.ndarray) -> dict[str, float | None]:
    """All trend figures of one series (NaN dates dropped)."""
    row = y[None, :]
    s, var, z, p = mann_kendall(row)

    def f(x: float) -> float | None:
        return None if not math.isfinite(x) else float(x)

    ok = np.isfinite(y)
    intercept = None
    slope = ols_slope(t, row)[0]
    if ok.sum() >= 3 and math.isfinite(slope):
        intercept = float(y[ok].mean() - slope * t[ok].mean())
    return {"ols_slope": f(slope), "ols_intercept": intercept, "sen_slope": f(sen_slope(t, row)[0]),
            "mk_s": f(s[0]), "mk_var_s": f(var[0]), "mk_z": f(z[0]), "mk_p": f(p[0])}
