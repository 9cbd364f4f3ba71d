"""The task suite: each task has a goal, step-by-step instructions, an expected tool chain, and an
answer computed by `evals.agents.reference` (numpy, rasterio, networkx... never the tools under test).

Two question styles per task, as in Earth-Bench: `instruction` (the goal plus the steps to follow) and
`goal` (autonomous planning: the goal only). A chain step's argument may refer to a field of an earlier
step's result (`Ref`): the oracle policy fills it from that result, and the Parameter metric matches it
by the pattern the tool's output files follow (`output://NDVI*.tif`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evals.agents import reference as ref
from evals.agents.metrics import Call, Expected

STYLES = ("instruction", "goal")
L8 = "sample://eo/landsat8_c1_l1t"
S2 = "sample://eo/sentinel2_l1c"


@dataclass(frozen=True)
class Ref:
    """The `field` of step `step`'s structured result; matched in metrics by `pattern`."""

    step: int
    field: str
    pattern: str


@dataclass(frozen=True)
class Step:
    name: str
    args: dict[str, Any]
    text: str


@dataclass
class Task:
    id: str
    family: str
    goal: str
    steps: list[Step]
    truth: Callable[[], Expected]
    read: Callable[[list[dict[str, Any]]], str]
    options: dict[str, str] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    def question(self, style: str) -> str:
        text = self.goal
        if self.options:
            text += "\n" + "\n".join(f"{k}. {v}" for k, v in self.options.items())
        if style == "instruction":
            text += "\nFollow these steps:\n" + "\n".join(f"{i + 1}. {s.text}" for i, s in enumerate(self.steps))
        return text

    @functools.cached_property
    def expected(self) -> Expected:
        return self.truth()

    def expected_calls(self) -> list[Call]:
        """The chain as metric calls, references replaced by their patterns."""
        return [Call(s.name, _patterns(s.args)) for s in self.steps]


def _patterns(value: Any) -> Any:
    if isinstance(value, Ref):
        return value.pattern
    if isinstance(value, dict):
        return {k: _patterns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_patterns(v) for v in value]
    return value


def resolve_refs(value: Any, results: list[dict[str, Any]]) -> Any:
    """Fill `Ref`s from the structured results of the earlier steps."""
    if isinstance(value, Ref):
        return results[value.step][value.field]
    if isinstance(value, dict):
        return {k: resolve_refs(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, results) for v in value]
    return value


def choose(value: float, bins: dict[str, tuple[float, float]]) -> str:
    """The option letter whose [low, high) range holds `value`."""
    for letter, (lo, hi) in bins.items():
        if lo <= value < hi:
            return letter
    raise ValueError(f"{value} is in no option range")


def fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}"


# EO tasks ------------------------------------------------------------------------------------------------

LANDSAT_INDEX_NAMES = {"NDVI": "normalised difference vegetation index", "EVI": "enhanced vegetation index",
                       "NDWI": "normalised difference water index (McFeeters, green/NIR)",
                       "MNDWI": "modified normalised difference water index (green/SWIR1)",
                       "NDMI": "normalised difference moisture index", "NBR": "normalised burn ratio",
                       "NDBI": "normalised difference built-up index"}


def _index_steps(scene: str, index: str, label: str, constants: dict[str, float] | None = None) -> list[Step]:
    args: dict[str, Any] = {"scene": scene, "index": index}
    if constants:
        args["constants"] = constants
    const_text = f" with {', '.join(f'{k} = {v}' for k, v in constants.items())}" if constants else ""
    return [
        Step("eo_spectral_index", args, f"Compute the {index} raster of {label} ({scene}){const_text} with "
             "eo_spectral_index."),
        Step("eo_statistics", {"raster": Ref(0, "output", f"output://{index}*.tif")},
             "Compute the statistics of the raster written in step 1 with eo_statistics."),
    ]


def _stat(results: list[dict[str, Any]], key: str) -> float:
    return float(results[-1]["stats"][key])


def _pct(results: list[dict[str, Any]], q: str) -> float:
    return float(results[-1]["percentiles"][q])


def eo_tasks() -> list[Task]:
    tasks: list[Task] = []
    l8 = "the bundled Landsat 8 scene"
    for index in ("NDVI", "EVI", "NDWI", "MNDWI", "NDMI", "NBR", "NDBI"):
        tasks.append(Task(
            id=f"eo-l8-{index.lower()}-mean", family="eo",
            goal=f"What is the mean {index} ({LANDSAT_INDEX_NAMES[index]}) of {l8} ({L8}), from top-of-atmosphere "
                 "reflectance over all valid pixels? Give 4 decimals.",
            steps=_index_steps(L8, index, l8),
            truth=lambda index=index: Expected("number", ref.mean(ref.landsat_index(index)), abs_tol=0.005),
            read=lambda r: fmt(_stat(r, "mean")),
        ))
    tasks.append(Task(
        id="eo-l8-savi-mean", family="eo",
        goal=f"What is the mean SAVI of {l8} ({L8}) with the soil adjustment factor L = 0.5? Give 4 decimals.",
        steps=_index_steps(L8, "SAVI", l8, {"L": 0.5}),
        truth=lambda: Expected("number", ref.mean(ref.landsat_index("SAVI")), abs_tol=0.005),
        read=lambda r: fmt(_stat(r, "mean")),
    ))
    tasks.append(Task(
        id="eo-l8-ndvi-median", family="eo",
        goal=f"What is the median NDVI of {l8} ({L8})? Give 4 decimals.",
        steps=_index_steps(L8, "NDVI", l8),
        truth=lambda: Expected("number", ref.percentile(ref.landsat_index("NDVI"), 50), abs_tol=0.005),
        read=lambda r: fmt(_pct(r, "p50")),
    ))
    tasks.append(Task(
        id="eo-l8-ndvi-p95", family="eo",
        goal=f"What is the 95th percentile of NDVI over {l8} ({L8})? Give 4 decimals.",
        steps=_index_steps(L8, "NDVI", l8),
        truth=lambda: Expected("number", ref.percentile(ref.landsat_index("NDVI"), 95), abs_tol=0.005),
        read=lambda r: fmt(_pct(r, "p95")),
    ))
    tasks.append(Task(
        id="eo-l8-ndvi-std", family="eo",
        goal=f"What is the standard deviation of NDVI over {l8} ({L8})? Give 4 decimals.",
        steps=_index_steps(L8, "NDVI", l8),
        truth=lambda: Expected("number", ref.std(ref.landsat_index("NDVI")), abs_tol=0.002),
        read=lambda r: fmt(_stat(r, "std")),
    ))
    tasks.append(Task(
        id="eo-l8-vegetated-share", family="eo",
        goal=f"What percentage of the valid area of {l8} ({L8}) has NDVI above 0.3? Give 2 decimals.",
        steps=[Step("eo_spectral_index", {"scene": L8, "index": "NDVI"},
                    f"Compute the NDVI raster of {l8} ({L8}) with eo_spectral_index."),
               Step("eo_area", {"raster": Ref(0, "output", "output://NDVI*.tif"), "rules": [{"op": ">", "value": 0.3}]},
                    "Measure the area with NDVI > 0.3 in that raster with eo_area.")],
        truth=lambda: Expected("number", ref.share_above(ref.landsat_index("NDVI"), 0.3), abs_tol=0.1),
        read=lambda r: fmt(float(r[-1]["rows"][0]["percent_of_valid"]), 2),
    ))
    tasks.append(Task(
        id="eo-l8-water-area", family="eo",
        goal=f"How many square kilometres of {l8} ({L8}) are open water by MNDWI > 0? Give 3 decimals.",
        steps=[Step("eo_spectral_index", {"scene": L8, "index": "MNDWI"},
                    f"Compute the MNDWI raster of {l8} ({L8}) with eo_spectral_index."),
               Step("eo_area", {"raster": Ref(0, "output", "output://MNDWI*.tif"),
                                "rules": [{"op": ">", "value": 0.0}]},
                    "Measure the area with MNDWI > 0 in that raster with eo_area.")],
        truth=lambda: Expected("number", ref.area_km2_above(ref.landsat_index("MNDWI"), 0.0, ref.LANDSAT_PIXEL_M2),
                               abs_tol=0.05),
        read=lambda r: fmt(float(r[-1]["rows"][0]["area_km2"]), 3),
    ))
    ndvi_bins = {"A": (-1.0, 0.2), "B": (0.2, 0.4), "C": (0.4, 0.6), "D": (0.6, 1.01)}
    tasks.append(Task(
        id="eo-l8-ndvi-class", family="eo",
        goal=f"Which range holds the mean NDVI of {l8} ({L8})?",
        options={"A": "below 0.2 (bare or water)", "B": "0.2 to 0.4 (sparse vegetation)",
                 "C": "0.4 to 0.6 (moderate vegetation)", "D": "above 0.6 (dense vegetation)"},
        steps=_index_steps(L8, "NDVI", l8),
        truth=lambda: Expected("choice", choose(ref.mean(ref.landsat_index("NDVI")), ndvi_bins),
                               options={k: str(v) for k, v in ndvi_bins.items()}),
        read=lambda r: choose(_stat(r, "mean"), ndvi_bins),
    ))
    lst_bins = {"A": (0.0, 275.0), "B": (275.0, 285.0), "C": (285.0, 300.0), "D": (300.0, 400.0)}
    tasks.append(Task(
        id="eo-l8-lst-class", family="eo",
        goal=f"Which range holds the mean land surface temperature of {l8} ({L8})?",
        options={"A": "below 275 K", "B": "275 to 285 K", "C": "285 to 300 K", "D": "above 300 K"},
        steps=[Step("eo_land_surface_temperature", {"scene": L8},
                    f"Retrieve land surface temperature of {l8} ({L8}) with eo_land_surface_temperature."),
               Step("eo_statistics", {"raster": Ref(0, "output", "output://LST*.tif")},
                    "Compute the statistics of that LST raster with eo_statistics.")],
        truth=lambda: Expected("choice", choose(ref.mean(ref.landsat_lst()), lst_bins),
                               options={k: str(v) for k, v in lst_bins.items()}),
        read=lambda r: choose(_stat(r, "mean"), lst_bins),
    ))
    s2 = "the bundled Sentinel-2 L1C tile"
    for index, tol in (("NDVI", 0.005), ("NDWI", 0.005), ("NBR", 0.005)):
        tasks.append(Task(
            id=f"eo-s2-{index.lower()}-mean", family="eo",
            goal=f"What is the mean {index} of {s2} ({S2}) over the pixels inside its data footprint? Give 4 "
                 "decimals.",
            steps=_index_steps(S2, index, s2),
            truth=lambda index=index, tol=tol: Expected("number", ref.mean(ref.sentinel_index(index)), abs_tol=tol),
            read=lambda r: fmt(_stat(r, "mean")),
        ))
    tasks.append(Task(
        id="eo-s2-vegetated-share", family="eo",
        goal=f"What percentage of the valid pixels of {s2} ({S2}) have NDVI above 0.3? Give 2 decimals.",
        steps=[Step("eo_spectral_index", {"scene": S2, "index": "NDVI"},
                    f"Compute the NDVI raster of {s2} ({S2}) with eo_spectral_index."),
               Step("eo_area", {"raster": Ref(0, "output", "output://NDVI*.tif"), "rules": [{"op": ">", "value": 0.3}]},
                    "Measure the area with NDVI > 0.3 in that raster with eo_area.")],
        truth=lambda: Expected("number", ref.share_above(ref.sentinel_index("NDVI"), 0.3), abs_tol=0.1),
        read=lambda r: fmt(float(r[-1]["rows"][0]["percent_of_valid"]), 2),
    ))
    tasks.append(Task(
        id="eo-l8-sun-elevation", family="eo",
        goal=f"What was the sun elevation, in degrees, when {l8} ({L8}) was acquired? Give 2 decimals.",
        steps=[Step("eo_describe_scene", {"scene": L8}, f"Describe {l8} ({L8}) with eo_describe_scene.")],
        truth=lambda: Expected("number", float(ref.mtl()["SUN_ELEVATION"]), abs_tol=0.01),
        read=lambda r: fmt(float(r[-1]["sun_elevation"]), 2),
    ))
    tasks.append(Task(
        id="eo-compare-ndvi", family="eo",
        goal=f"Which scene has the higher mean NDVI: {l8} ({L8}) or {s2} ({S2}) (valid pixels only)?",
        options={"A": "the Landsat 8 scene", "B": "the Sentinel-2 tile"},
        steps=[Step("eo_spectral_index", {"scene": L8, "index": "NDVI"}, f"Compute the NDVI of {L8}."),
               Step("eo_spectral_index", {"scene": S2, "index": "NDVI"}, f"Compute the NDVI of {S2}."),
               ],
        truth=lambda: Expected("choice", "A" if ref.mean(ref.landsat_index("NDVI")) > ref.mean(ref.sentinel_index(
            "NDVI")) else "B", options={"A": "Landsat", "B": "Sentinel"}),
        read=lambda r: "A" if r[0]["stats"]["mean"] > r[1]["stats"]["mean"] else "B",
    ))
    return tasks

