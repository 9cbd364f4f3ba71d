"""The blind filter on every bundled real data set: blind for the correct generator, sharp for a wrong one."""

from __future__ import annotations

import math

import pytest

from tools.errors import InvalidInput
from tools.nid.blind import blind_filter
from tools.nid.identifier_tools import nid_blind_filter

WRONG = {"tweets": "lower", "eth_tokens": "lower", "jsonlite_md5": "upper", "opacus_git_log": "upper"}


@pytest.mark.parametrize("dataset", ["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log"])
def test_auc_near_half_for_correct_gids(dataset: str) -> None:
    r = nid_blind_filter(dataset=dataset, n_gids=7, max_nids=300, seed=0)
    assert r.n_nids >= 180
    assert 0.45 <= r.auc <= 0.55, r.auc
    assert r.kept >= 0.95 * r.n_nids


def test_serialversionuid_has_too_few_for_a_tight_auc() -> None:
    """Only 14 random-looking serialVersionUIDs exist in the data; the AUC's null sd is sqrt(1/(12*14)) = 0.077,
    so it is checked within three standard deviations of 0.5."""
    r = nid_blind_filter(dataset="serialversionuid", n_gids=31)
    assert r.n_nids == 14
    assert abs(r.auc - 0.5) <= 3 * math.sqrt(1 / (12 * 14))


@pytest.mark.parametrize("dataset", sorted(WRONG))
def test_wrong_casing_is_caught(dataset: str) -> None:
    how = WRONG[dataset]
    r = nid_blind_filter(dataset=dataset, n_gids=3, max_nids=200, gid_casing=how)
    assert r.auc >= 0.9
    assert r.verdict.startswith("distinguishable")


def test_extreme_nids_are_dropped() -> None:
    nids = [f"{i:032x}" for i in range(40)]
    gids = [[f"{(i * 977 + j * 7919) % 2**128:032x}".upper() for j in range(63)] for i in range(40)]
    r = blind_filter(nids, gids, extreme=0.05)
    assert r.auc > 0.95 and len(r.dropped) >= 35
    with pytest.raises(InvalidInput):
        blind_filter(nids[:1], gids[:1])
