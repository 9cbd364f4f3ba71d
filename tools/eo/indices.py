"""Spectral indices from the Awesome Spectral Indices catalogue (spyndex's own JSON tables): lookup, search,
and block evaluation as spyndex.computeIndex / computeKernel do it (formulas are never retyped here).

Names are the catalogue's, which are unambiguous: NDWI is McFeeters' (G-N)/(G+N); NDMI is (N-S1)/(N+S1),
the form of Gao's 1996 NDWI. Two aliases say so explicitly: NDWI_MCFEETERS -> NDWI, NDWI_GAO -> NDMI.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tools.errors import InvalidInput, unknown_name

ALIASES = {"NDWI_MCFEETERS": "NDWI", "NDWI_GAO": "NDMI"}
RADAR = {"VV", "VH", "HH", "HV"}
_KERNEL = re.compile(r"^k([A-Z][A-Z0-9]?)([A-Z][A-Z0-9]?)$")


def _spyndex_data(file: str) -> dict[str, Any]:
    """One JSON table of spyndex's data folder, read without importing spyndex (its import pulls in requests,
    python-box and more: about half a second for every process that computes an index)."""
    import importlib.util
    import json
    from pathlib import Path

    spec = importlib.util.find_spec("spyndex")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("spyndex is not installed (pip install spyndex)")
    return json.loads((Path(next(iter(spec.submodule_search_locations))) / "data" / file).read_text())


# The platform keys of bands.json and the attribute names spyndex.axioms.Band gives them.
_PLATFORMS = {"sentinel2a": "sentinel2a", "sentinel2b": "sentinel2b", "landsat4": "landsat4", "landsat5": "landsat5",
              "landsat7": "landsat7", "landsat8": "landsat8", "landsat9": "landsat9", "modis": "modis",
              "wv3": "worldview3", "wv2": "worldview2", "planetscope": "planetscope"}


@functools.cache
def catalogue() -> dict[str, Any]:
    """name -> index (short_name, long_name, bands, application_domain, reference, formula...: the attributes
    of spyndex.SpectralIndex, from the JSON shipped inside spyndex; no network)."""
    from types import SimpleNamespace

    out = {}
    for key, v in _spyndex_data("spectral-indices-dict.json")["SpectralIndices"].items():
        out[key] = SimpleNamespace(**{**v, "formula": v["formula"].replace(" ", "")})
    return out


@functools.cache
def _bands() -> dict[str, Any]:
    from types import SimpleNamespace

    out = {}
    for key, v in _spyndex_data("bands.json").items():
        b = SimpleNamespace(short_name=v["short_name"], long_name=v["long_name"], common_name=v["common_name"],
                            min_wavelength=v["min_wavelength"], max_wavelength=v["max_wavelength"],
                            standard=v["short_name"])
        for platform, attr in _PLATFORMS.items():
            if platform in v["platforms"]:
                setattr(b, attr, SimpleNamespace(**v["platforms"][platform]))
        out[key] = b
    return out


@functools.cache
def _constants() -> dict[str, Any]:
    from types import SimpleNamespace

    return {key: SimpleNamespace(description=v["description"], long_name=v["description"],
                                 short_name=v["short_name"], standard=v["short_name"], default=v["default"],
                                 value=v["default"]) for key, v in _spyndex_data("constants.json").items()}


def band_description(symbol: str) -> str:
    if symbol in RADAR:
        return f"SAR backscatter {symbol}"
    b = _bands().get(symbol)
    if b is None:
        return symbol
    return f"{b.long_name}, {b.min_wavelength}-{b.max_wavelength} nm"


def resolve_name(name: str) -> str:
    """The catalogue name for `name` (exact, alias or case-insensitive), or NotFound with close names."""
    cat = catalogue()
    n = name.strip()
    if n in cat:
        return n
    if n.upper() in ALIASES:
        return ALIASES[n.upper()]
    folded = {k.lower(): k for k in cat}
    if n.lower() in folded:
        return folded[n.lower()]
    raise unknown_name("spectral index", n, cat, aliases=ALIASES, listed_by="eo_list_indices")


@dataclass
class Inputs:
    """What an index needs: band symbols, constants (with defaults), kernels and wavelengths."""

    bands: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    kernels: dict[str, tuple[str, str]] = field(default_factory=dict)
    wavelengths: dict[str, str] = field(default_factory=dict)  # lambdaN -> N


def inputs_of(name: str) -> Inputs:
    idx = catalogue()[name]
    out = Inputs()
    consts = _constants()
    for p in idx.bands:
        if p.startswith("lambda") and p[6:] in _bands():
            out.wavelengths[p] = p[6:]
        elif p in consts:
            out.constants.append(p)
        elif (m := _KERNEL.match(p)) and p not in _bands():
            out.kernels[p] = (m.group(1), m.group(2))
            for s in m.groups():
                if s in _bands() and s not in out.bands:
                    out.bands.append(s)
                elif s in consts and s not in out.constants:
                    out.constants.append(s)
        elif p not in out.bands:
            out.bands.append(p)
    if out.kernels and "sigma" not in out.constants:
        out.constants.append("sigma")
    return out


def entry(name: str, available: set[str] | None = None) -> dict[str, Any]:
    """A small JSON-able description of one index (and, given a scene's symbols, what it lacks)."""
    idx = catalogue()[name]
    ins = inputs_of(name)
    d: dict[str, Any] = {
        "name": name, "long_name": idx.long_name, "formula": idx.formula, "bands": ins.bands,
        "constants": {c: _constants()[c].default for c in ins.constants if c in _constants()},
        "domain": idx.application_domain, "reference": idx.reference,
    }
    if available is not None:
        missing = [b for b in ins.bands if b not in available]
        missing += [c for c in ins.constants if c in _constants() and _constants()[c].default is None]
        d["missing"] = missing
    return d


def search(query: str | None = None, domain: str | None = None, bands: list[str] | None = None,
           available: set[str] | None = None, computable_only: bool = False) -> list[str]:
    """Catalogue names matching a text query (name or long name), a domain, and bands used."""
    q = (query or "").strip().lower()
    domains = sorted({i.application_domain for i in catalogue().values()})
    if domain and domain.lower() not in domains:
        raise InvalidInput(f"Unknown application domain {domain!r}.", hint=f"Use one of {', '.join(domains)}.")
    out = []
    for name, idx in catalogue().items():
        if q and q not in name.lower() and q not in idx.long_name.lower():
            continue
        if domain and idx.application_domain != domain.lower():
            continue
        ins = inputs_of(name)
        if bands and not set(bands) <= set(ins.bands):
            continue
        if computable_only and available is not None and entry(name, available)["missing"]:
            continue
        out.append(name)
    return out


def domains() -> list[str]:
    return sorted({i.application_domain for i in catalogue().values()})


def wavelength_nm(symbol: str, platform: str) -> float | None:
    """Centre wavelength of a spyndex band on a platform (spyndex's band table)."""
    key = {"LANDSAT_8": "landsat8", "LANDSAT_9": "landsat9", "LANDSAT_7": "landsat7", "LANDSAT_5": "landsat5",
           "LANDSAT_4": "landsat5", "SENTINEL_2B": "sentinel2b"}.get(platform, "sentinel2a")
    candidates = [symbol] + (["N2"] if symbol == "N" else [])
    for s in candidates:
        b = _bands().get(s)
        pb = getattr(b, key, None) if b is not None else None
        if pb is not None:
            return float(pb.wavelength)
    return None


@functools.cache
def _compiled(name: str) -> Any:
    """The catalogue formula of `name`, compiled once. spyndex.computeIndex evaluates the same string with
    eval() but re-reads its JSON catalogue on every call (~30 ms), too slow per block."""
    return compile(catalogue()[name].formula, f"<spyndex {name}>", "eval")


@dataclass
class Plan:
    """How to evaluate one index on blocks: band symbols to read, fixed parameters, kernels."""

    name: str
    bands: list[str]
    params: dict[str, float]
    kernels: dict[str, tuple[str, str]]

    def evaluate(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        params: dict[str, Any] = dict(self.params)
        params.update({s: arrays[s] for s in self.bands})
        with np.errstate(all="ignore"):
            if self.kernels:
                import spyndex
            for k, (a, b) in self.kernels.items():
                params[k] = spyndex.computeKernel(
                    "RBF", params={"a": params[a], "b": params[b], "sigma": params["sigma"]})
            result = eval(_compiled(self.name), {"__builtins__": {}}, params)  # what spyndex.computeIndex runs
        out = np.asarray(result, dtype=np.float64)
        if out.shape != next(iter(arrays.values())).shape:
            out = np.broadcast_to(out, next(iter(arrays.values())).shape).copy()
        return out  # +-inf (a zero denominator) is turned into NaN where the result is stored


def plan(name: str, available: Callable[[str], bool], platform: str, constants: dict[str, float] | None,
         what: Callable[[str], None]) -> Plan:
    """A `Plan` for `name`; `what(symbol)` raises the missing-band error for a band the scene lacks."""
    ins = inputs_of(name)
    given = dict(constants or {})
    unknown = [k for k in given if k not in ins.constants]
    if unknown:
        raise InvalidInput(f"{name} takes no constant {', '.join(unknown)}.",
                           hint=f"Its constants are: {', '.join(ins.constants) or 'none'}.")
    for s in ins.bands:
        if not available(s):
            what(s)
    params: dict[str, float] = {}
    for c in ins.constants:
        if c in given:
            params[c] = float(given[c])
            continue
        default = _constants()[c].default if c in _constants() else None
        if c == "sigma" and default is None:
            default = 0.5
        if default is None:
            raise InvalidInput(f"{name} needs the constant {c} ({_constants()[c].description}), which has no "
                               "default.", hint=f'Pass it, e.g. constants={{"{c}": ...}}.')
        params[c] = float(default)
    for lam, sym in ins.wavelengths.items():
        wl = wavelength_nm(sym, platform)
        if wl is None:
            what(sym)
        params[lam] = wl  # type: ignore[assignment]
    return Plan(name, ins.bands, params, ins.kernels)
