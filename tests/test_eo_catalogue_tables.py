"""The index, band and constant tables read from spyndex's JSON equal what spyndex itself builds from them."""

from __future__ import annotations

import spyndex

from tools.eo import indices


def test_indices_match_spyndex() -> None:
    cat = indices.catalogue()
    assert list(cat) == list(spyndex.indices.keys())
    for name, ref in spyndex.indices.items():
        for attr in ("short_name", "long_name", "bands", "application_domain", "reference", "formula", "platforms"):
            assert getattr(cat[name], attr) == getattr(ref, attr), (name, attr)


def test_bands_and_constants_match_spyndex() -> None:
    bands = indices._bands()
    assert list(bands) == list(spyndex.bands.keys())
    for key, ref in spyndex.bands.items():
        for attr in ("long_name", "common_name", "min_wavelength", "max_wavelength"):
            assert getattr(bands[key], attr) == getattr(ref, attr), (key, attr)
        for platform in indices._PLATFORMS.values():
            assert hasattr(bands[key], platform) == hasattr(ref, platform), (key, platform)
            if hasattr(ref, platform):
                assert getattr(bands[key], platform).wavelength == getattr(ref, platform).wavelength
    consts = indices._constants()
    assert list(consts) == list(spyndex.constants.keys())
    for key, ref in spyndex.constants.items():
        assert (consts[key].default, consts[key].description) == (ref.default, ref.description)


def test_ndvi_formula_evaluates_like_spyndex() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    n, r = rng.uniform(0.01, 0.6, 1000), rng.uniform(0.01, 0.6, 1000)
    plan = indices.plan("NDVI", lambda s: True, "LANDSAT_8", None, lambda s: None)
    assert np.array_equal(plan.evaluate({"N": n, "R": r}), spyndex.computeIndex("NDVI", {"N": n, "R": r}))
