"""From identifier occurrences to candidate sets and membership-score features.

A candidate set is an NID in its document plus GIDs of its type; each candidate is scored in the same
context (only the identifier differs), giving a feature array (NIDs, candidates, scores) with the NID
in column 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tools.nid.contexts import Context, make_context
from tools.nid.formats import generate_gids
from tools.nid.scorers import Scorer
from tools.nid.scores import SCORE_NAMES, membership_scores
from tools.progress import Progress, report


@dataclass(frozen=True)
class CandidateSet:
    nid: str
    type: str
    doc: str
    start: int
    end: int
    gids: tuple[str, ...]
    recall_gid: str  # one further GID whose context is the non-member prefix for ReCaLL

    def contexts(self, prefix_chars: int, suffix_chars: int) -> list[Context]:
        return [make_context(self.doc, self.start, self.end, v, prefix_chars=prefix_chars, suffix_chars=suffix_chars)
                for v in (self.nid, *self.gids)]


def candidate_set(doc: str, start: int, end: int, nid_type: str, n_gids: int, seed: int = 0) -> CandidateSet:
    nid = doc[start:end]
    g = generate_gids(nid, nid_type, n_gids + 1, seed=seed)
    return CandidateSet(nid, nid_type, doc, start, end, tuple(g[:-1]), g[-1])


def score_features(scorer: Scorer, sets: list[CandidateSet], *, prefix_chars: int = 96, suffix_chars: int = 32,
                   k: float = 0.2, recall: bool = True, batch_size: int = 64, block: int = 256,
                   progress: Progress | None = None) -> np.ndarray:
    """Scores (len(sets), 1 + n_gids, len(SCORE_NAMES)) of every candidate in its context, in batches."""
    if not sets:
        return np.zeros((0, 0, len(SCORE_NAMES)))
    c = 1 + len(sets[0].gids)
    feats = np.full((len(sets), c, len(SCORE_NAMES)), np.nan)
    step = max(1, block // c)
    for lo in range(0, len(sets), step):
        chunk = sets[lo : lo + step]
        ctxs = [ctx for s in chunk for ctx in s.contexts(prefix_chars, suffix_chars)]
        extra = {"progress": progress} if getattr(scorer, "checks_progress", False) else {}
        stats = scorer.token_stats(ctxs, batch_size=batch_size, **extra)
        pre_stats = None
        if recall:
            pre = []
            for s in chunk:
                p = make_context(s.doc, s.start, s.end, s.recall_gid, prefix_chars=prefix_chars,
                                 suffix_chars=suffix_chars).text + "\n"
                pre += [Context(p + x.text, x.start + len(p), x.end + len(p))
                        for x in s.contexts(prefix_chars, suffix_chars)]
            pre_stats = scorer.token_stats(pre, batch_size=batch_size, **extra)
        for j, ctx in enumerate(ctxs):
            sc = membership_scores(stats[j], ctx.identifier, k=k, with_prefix=pre_stats[j] if pre_stats else None)
            feats[lo + j // c, j % c] = [sc[name] for name in SCORE_NAMES]
        report(progress, min(lo + step, len(sets)), len(sets), f"scored {min(lo + step, len(sets))} NIDs")
    return feats
