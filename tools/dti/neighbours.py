"""Known-interaction neighbourhood of a drug-target pair: the model's pair-level modality.

A trained model keeps the labelled pairs it was trained on (its reference). For a query pair it reads
13 features from them, by drug similarity (Tanimoto on ECFP4 bits) and protein similarity (cosine of
k-mer counts; k = 5 by default, where few k-mers are shared by chance and a shared one mostly means
homology; indexes saved before k was a setting used 3):

- drug block, from the drug's other labelled pairs: whether it has any, log count of its other
  positives, their smoothed label mean, and the highest similarity of the target to the drug's other
  positive targets;
- target block, from the target's other labelled pairs: the same, with the highest similarity of the
  drug to the target's other ligands (similarity-ensemble style);
- cold block, from pairs that share neither the drug nor the target: similarity-weighted label means
  over similar drugs and over similar targets, a drug-similarity x target-similarity kernel over
  known positives, and the highest drug and target similarity to the reference. Similarity weights are
  cubed, which sharpens them towards the nearest neighbours.

The pair itself, and for the cold block every pair of the same drug or target, is always left out, so
a training pair sees exactly what an unseen pair would. A drug unseen in the reference gets an empty
drug block, as does a training pair whose drug block is dropped to simulate that (`COLD_DRUG`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tools.dti.chem import AMINO_ACIDS

FEATURE_NAMES = (
    "drug_known",
    "drug_other_positives_log",
    "drug_other_label_mean",
    "drug_partner_target_similarity",
    "target_known",
    "target_other_positives_log",
    "target_other_label_mean",
    "target_ligand_similarity",
    "similar_drugs_label_mean",
    "similar_targets_label_mean",
    "similarity_kernel_log",
    "max_drug_similarity",
    "max_target_similarity",
)
COLD_DRUG = slice(0, 4)
COLD_TARGET = slice(4, 8)
KMER = 5
LEGACY_KMER = 3  # the k of a saved index that does not say which
KMERS = range(2, 6)  # 20**6 rows would be 0.5 GB of index pointers alone

_AA = np.full(128, -1, dtype=np.int64)
for _i, _a in enumerate(AMINO_ACIDS):
    _AA[ord(_a)] = _i


def kmer_profiles(sequences: Sequence[str], k: int = KMER) -> Any:
    """Unit-length k-mer count vectors (sparse CSR, n x 20**k); windows with X are skipped."""
    from scipy import sparse

    rows, cols, vals = [], [], []
    for r, s in enumerate(sequences):
        codes = _AA[np.frombuffer(s.encode("ascii"), dtype=np.uint8)]
        if len(codes) < k:
            continue
        win = np.lib.stride_tricks.sliding_window_view(codes, k)
        win = win[(win >= 0).all(1)]
        ids = (win * (20 ** np.arange(k - 1, -1, -1))).sum(1)
        u, c = np.unique(ids, return_counts=True)
        rows.append(np.full(len(u), r))
        cols.append(u)
        vals.append(c / np.sqrt((c.astype(np.float64) ** 2).sum()))
    shape = (len(sequences), 20**k)
    if not rows:
        return sparse.csr_matrix(shape, dtype=np.float32)
    return sparse.csr_matrix(
        (np.concatenate(vals).astype(np.float32), (np.concatenate(rows), np.concatenate(cols))), shape=shape
    )


def tanimoto(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tanimoto similarity of two 0/1 fingerprint matrices, (n, bits) x (m, bits) -> (n, m) float32."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    inter = a @ b.T
    union = a.sum(1)[:, None] + b.sum(1)[None, :]
    union -= inter
    np.maximum(union, 1.0, out=union)  # an empty pair has no intersection either: 0 / 1
    inter /= union
    return inter


def _cube(x: np.ndarray) -> np.ndarray:
    out = x * x
    out *= x
    return out


@dataclass
class NeighbourIndex:
    """The labelled reference pairs a model was trained on, with what is needed to compare to them."""

    smiles: list[str]  # canonical SMILES per reference drug
    sequences: list[str]  # cleaned sequence per reference protein
    drug_bits: np.ndarray  # (nd, 1024) uint8
    d: np.ndarray  # reference pairs: drug index
    t: np.ndarray  # target index
    y: np.ndarray  # label 0/1
    kmer: int = KMER  # k of the protein k-mer profiles

    def __post_init__(self) -> None:
        from scipy import sparse

        if self.kmer not in KMERS:
            raise ValueError(f"k-mer size must be {KMERS.start} to {KMERS.stop - 1}; got {self.kmer}")
        nd, nt = len(self.smiles), len(self.sequences)
        self.drug_index = {s: i for i, s in enumerate(self.smiles)}
        self.target_index = {s: i for i, s in enumerate(self.sequences)}
        self.profiles_t = kmer_profiles(self.sequences, self.kmer).T.tocsr()  # (20**k, nt), for query @ profiles_t
        y = self.y.astype(np.float32)
        self.label = sparse.csr_matrix((y, (self.d, self.t)), shape=(nd, nt))  # duplicates add up
        self.count = sparse.csr_matrix((np.ones_like(y), (self.d, self.t)), shape=(nd, nt))
        self.positive = sparse.csr_matrix(((y > 0.5).astype(np.float32), (self.d, self.t)), shape=(nd, nt))
        self.positive.data = np.minimum(self.positive.data, 1.0)
        self.positive.eliminate_zeros()  # negatives leave explicit zeros; row indices must list positives only
        # column (per-target) access goes through CSC copies; row (per-drug) access through the CSR ones
        self.label_csc, self.count_csc = self.label.tocsc(), self.count.tocsc()
        self.positive_t = self.positive.T.tocsr()
        self.drug_label = np.asarray(self.label.sum(1)).ravel()
        self.drug_count = np.asarray(self.count.sum(1)).ravel()
        self.drug_pos = np.asarray(self.positive.sum(1)).ravel()
        self.target_label = np.asarray(self.label.sum(0)).ravel()
        self.target_count = np.asarray(self.count.sum(0)).ravel()
        self.target_pos = np.asarray(self.positive.sum(0)).ravel()
        self.prior = float(y.mean()) if len(y) else 0.0
        self._bits_t = np.ascontiguousarray(self.drug_bits.T, dtype=np.float32)  # (bits, nd), for `similarity`
        self._bits_on = self.drug_bits.sum(1, dtype=np.float32)

    def similarity(self, bits: np.ndarray) -> np.ndarray:
        """`tanimoto(bits, self.drug_bits)`, the intersections summed over the on-bits of the query rows
        only (a sparse product: ~50 of 1024 bits are on); they are exact integers, so the values are equal."""
        from scipy import sparse

        a = np.asarray(bits, dtype=np.float32)
        inter = np.asarray(sparse.csr_matrix(a) @ self._bits_t, dtype=np.float32)
        union = a.sum(1)[:, None] + self._bits_on[None, :]
        union -= inter
        np.maximum(union, 1.0, out=union)
        inter /= union
        return inter

    @classmethod
    def from_tables(cls, tables: Any, d: np.ndarray, t: np.ndarray, y: np.ndarray, kmer: int = KMER) -> NeighbourIndex:
        """The reference of labelled pairs (indices into `tables`, NaN labels skipped)."""
        keep = ~np.isnan(y)
        d, t, y = d[keep], t[keep], y[keep]
        ud, dinv = np.unique(d, return_inverse=True)
        ut, tinv = np.unique(t, return_inverse=True)
        return cls(
            [tables.smiles[i] for i in ud],
            [tables.sequences[i] for i in ut],
            (tables.drugs["ecfp"][ud] > 0).astype(np.uint8),
            dinv.astype(np.int32),
            tinv.astype(np.int32),
            (y > 0.5).astype(np.uint8),
            kmer,
        )

    def state(self) -> dict[str, Any]:
        """Arrays and strings that rebuild this index (for a checkpoint)."""
        return {
            "smiles": list(self.smiles),
            "sequences": list(self.sequences),
            "drug_bits": np.packbits(self.drug_bits, axis=1),
            "n_bits": int(self.drug_bits.shape[1]),
            "d": self.d,
            "t": self.t,
            "y": self.y,
            "kmer": self.kmer,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NeighbourIndex:
        bits = np.unpackbits(np.asarray(state["drug_bits"], dtype=np.uint8), axis=1)[:, : int(state["n_bits"])]
        return cls(
            list(state["smiles"]),
            list(state["sequences"]),
            bits,
            np.asarray(state["d"], dtype=np.int32),
            np.asarray(state["t"], dtype=np.int32),
            np.asarray(state["y"], dtype=np.uint8),
            int(state.get("kmer", LEGACY_KMER)),
        )

    def features_for_tables(self, tables: Any, d: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Features (n, 13) of pairs given as indices into model-input tables (see `train.Tables`)."""
        return self.features(tables.drugs["ecfp"], tables.smiles, tables.sequences, d, t)

    def features(
        self,
        drug_bits: np.ndarray,
        smiles: Sequence[str],
        sequences: Sequence[str],
        d: np.ndarray,
        t: np.ndarray,
    ) -> np.ndarray:
        """Features of query pairs (d[i], t[i]) indexing query drugs (bits, canonical SMILES) and proteins.

        Query entities equal to a reference entity (same canonical SMILES or sequence) are matched to it
        and left out of their own neighbourhood.
        """
        out = np.zeros((len(d), len(FEATURE_NAMES)), dtype=np.float32)
        if len(d) == 0 or len(self.y) == 0:
            return out
        qd_ref = np.array([self.drug_index.get(s, -1) for s in smiles], dtype=np.int64)
        qt_ref = np.array([self.target_index.get(s, -1) for s in sequences], dtype=np.int64)
        ud, a = np.unique(d, return_inverse=True)
        ut, b = np.unique(t, return_inverse=True)
        st = (kmer_profiles([sequences[i] for i in ut], self.kmer) @ self.profiles_t).toarray().astype(np.float32)
        rt = qt_ref[ut]
        st[np.flatnonzero(rt >= 0), rt[rt >= 0]] = 0.0  # a query entity never counts as its own neighbour
        wt = _cube(st)  # (u_t, nt)
        # per unique target: its reference columns, and sum_t' P[:, t'] wt[t'] over known positives (the
        # inner sum of the kernel), each (nd, u_t)
        lab_col = self._columns(self.label_csc, rt)
        cnt_col = self._columns(self.count_csc, rt)
        ker_t = np.asarray(self.positive @ wt.T, dtype=np.float32)
        ligands = [self.positive_t[j].indices if j >= 0 else np.zeros(0, np.int32) for j in rt]
        t_num, t_den = wt @ self.target_label, wt @ self.target_count
        st_max = st.max(1, initial=0.0)
        # pairs are grouped by unique drug; each block of unique drugs gets (block, u_t) matrices
        order = np.argsort(a, kind="stable")
        starts = np.searchsorted(a[order], np.arange(len(ud) + 1))
        block = int(max(64, min(4096, 4_000_000 // max(1, len(ut)))))
        for s0 in range(0, len(ud), block):
            s1 = min(len(ud), s0 + block)
            rows = order[starts[s0] : starts[s1]]
            if len(rows):
                out[rows] = self._block(
                    np.asarray(drug_bits)[ud[s0:s1]],
                    qd_ref[ud[s0:s1]],
                    rt,
                    a[rows] - s0,
                    b[rows],
                    st,
                    wt,
                    lab_col,
                    cnt_col,
                    ker_t,
                    ligands,
                    t_num,
                    t_den,
                    st_max,
                )
        return out

    def _block(self, bits, rd, rt, a, b, st, wt, lab_col, cnt_col, ker_t, ligands, t_num, t_den, st_max) -> np.ndarray:
        """Features of pairs (a, b) indexing a block of unique query drugs and all unique query targets."""
        sd = self.similarity(bits)
        sd[np.flatnonzero(rd >= 0), rd[rd >= 0]] = 0.0
        wd = _cube(sd)  # (u_d, nd): similarity weights
        known_d = np.flatnonzero(rd >= 0)
        # target-ligand similarity: max over the target's known ligands (self already zeroed in sd)
        lig_sim = np.zeros((len(sd), len(rt)), np.float32)
        for j, lig in enumerate(ligands):
            if len(lig):
                lig_sim[:, j] = sd[:, lig].max(1)
        # drug-partner similarity: max over the drug's known positive targets (self zeroed in st)
        partner_sim = np.zeros((len(sd), len(rt)), np.float32)
        for i in known_d:
            partners = self.positive[rd[i]].indices
            if len(partners):
                partner_sim[i] = st[:, partners].max(1)
        # similarity-weighted sums over the reference, less the pairs that share the query's target / drug
        d_num, d_den = wd @ self.drug_label, wd @ self.drug_count
        lab_same_t, cnt_same_t, kernel = wd @ lab_col, wd @ cnt_col, wd @ ker_t  # (u_d, u_t)
        lab_same_d = np.zeros((len(sd), len(rt)), np.float32)
        cnt_same_d = np.zeros((len(sd), len(rt)), np.float32)
        if len(known_d):
            lab_same_d[known_d] = (wt @ self.label[rd[known_d]].toarray().T).T
            cnt_same_d[known_d] = (wt @ self.count[rd[known_d]].toarray().T).T
        pd_, pt_ = rd[a], rt[b]
        o = np.zeros((len(a), len(FEATURE_NAMES)), dtype=np.float32)
        # the pair's own reference entries (0 when either end is not in the reference)
        both = (pd_ >= 0) & (pt_ >= 0)
        own_lab = np.zeros(len(a), np.float32)
        own_cnt = np.zeros(len(a), np.float32)
        own_pos = np.zeros(len(a), np.float32)
        if both.any():
            own_lab[both] = np.asarray(self.label[pd_[both], pt_[both]]).ravel()
            own_cnt[both] = np.asarray(self.count[pd_[both], pt_[both]]).ravel()
            own_pos[both] = np.asarray(self.positive[pd_[both], pt_[both]]).ravel()
        for col, ref, count, pos, label, sims in (
            (0, pd_, self.drug_count, self.drug_pos, self.drug_label, partner_sim),
            (4, pt_, self.target_count, self.target_pos, self.target_label, lig_sim),
        ):
            known = ref >= 0
            safe = np.maximum(ref, 0)
            n_other = np.where(known, count[safe] - own_cnt, 0.0)
            has = n_other > 0
            o[:, col] = has
            o[:, col + 1] = np.where(has, np.log1p(np.where(known, pos[safe] - own_pos, 0.0)), 0.0)
            lab_other = np.where(known, label[safe] - own_lab, 0.0)
            o[:, col + 2] = np.where(has, (lab_other + self.prior) / (n_other + 1.0), 0.0)
            o[:, col + 3] = np.where(has, sims[a, b], 0.0)
        num = d_num[a] - lab_same_t[a, b]
        den = d_den[a] - cnt_same_t[a, b]
        o[:, 8] = (num + 1e-3 * self.prior) / (np.maximum(den, 0.0) + 1e-3)
        num = t_num[b] - lab_same_d[a, b]
        den = t_den[b] - cnt_same_d[a, b]
        o[:, 9] = (num + 1e-3 * self.prior) / (np.maximum(den, 0.0) + 1e-3)
        o[:, 10] = np.log1p(np.maximum(kernel[a, b], 0.0))
        o[:, 11] = sd.max(1, initial=0.0)[a]
        o[:, 12] = st_max[b]
        return o

    @staticmethod
    def _columns(matrix: Any, cols: np.ndarray) -> np.ndarray:
        """Dense columns `cols` of a sparse matrix; zero columns where the index is -1."""
        out = np.zeros((matrix.shape[0], len(cols)), dtype=np.float32)
        ok = np.flatnonzero(cols >= 0)
        if len(ok):
            out[:, ok] = matrix[:, cols[ok]].toarray()
        return out
