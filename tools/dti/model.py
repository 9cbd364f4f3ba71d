"""The multimodal DTI model in torch: modality encoders, GRAM volume loss, adaptive modality dropout, heads.

Drug modalities: ECFP4 bits (MLP), RDKit descriptors (MLP), SMILES characters (1-D CNN). Protein
modalities: residue sequence (1-D CNN), composition AAC + dipeptide + CTD (MLP). Every encoder maps to
a shared `dim`-dimensional space. The GRAM loss aligns the modalities of interacting pairs by the
volume of the parallelotope their unit embeddings span (sqrt of the Gram determinant), contrasted
across the batch (beside the supervised loss, and optionally in a pretraining stage before it); the
interaction head reads the fused drug and protein vectors.

With `neighbour_features`, a sixth, pair-level modality joins the head: the pair's known-interaction
neighbourhood (tools/dti/neighbours.py), encoded by an MLP.

Fusion per side is either the mean of the modality embeddings ("mean") or gated residual ("gated"): the
side's primary modality (ECFP4 for the drug, composition for the protein) plus each other modality times
a learned per-dimension gate tanh(g), with g starting at 0, so training starts from the primary pair and
opens a gate only as far as the modality helps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from tools.dti.features import (
    DESCRIPTOR_NAMES,
    ECFP_BITS,
    PROTEIN_COMPOSITION_DIM,
    PROTEIN_VOCAB,
    SMILES_VOCAB,
)

DRUG_MODALITIES = ("drug_ecfp", "drug_descriptors", "drug_smiles")
PROTEIN_MODALITIES = ("protein_sequence", "protein_composition")
PRIMARY_MODALITIES = ("drug_ecfp", "protein_composition")
FUSIONS = ("mean", "gated")
SEQUENCE_ENCODER_SEED = 0
MODALITIES = DRUG_MODALITIES + PROTEIN_MODALITIES
INPUT_OF = {
    "drug_ecfp": "ecfp",
    "drug_descriptors": "desc",
    "drug_smiles": "tokens",
    "protein_sequence": "ptokens",
    "protein_composition": "comp",
}


class _Standardize(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(n))
        self.register_buffer("std", torch.ones(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std).clamp(-6, 6)


class MLPEncoder(nn.Module):
    def __init__(
        self, n_in: int, hidden: int, dim: int, dropout: float, standardize: bool, input_dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.norm = _Standardize(n_in) if standardize else nn.Identity()
        self.net = nn.Sequential(
            nn.Dropout(input_dropout),
            nn.Linear(n_in, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.norm(x))


class CNNEncoder(nn.Module):
    """A one-layer 1-D CNN over tokens with global max and mean pooling, then an MLP.

    The convolution has width n and stride 1; its filter response to each window is read from a table
    indexed by the window's n-gram (a `nn.Conv1d` on one-hot tokens is the special case where the table
    is a sum of per-position terms), followed by ReLU. Windows that reach into padding map to a fixed
    zero row, so they never win the max and are left out of the mean. In training, sequences longer
    than `crop` are cut to a random window (global pooling makes the encoder length-agnostic).
    """

    def __init__(self, vocab: int, n: int, channels: int, dim: int, crop: int | None = None) -> None:
        super().__init__()
        self.vocab, self.n = vocab, n
        self.pad_id = vocab**n
        self.gram = nn.Embedding(vocab**n + 1, channels, padding_idx=self.pad_id)
        self.proj = nn.Sequential(nn.Linear(2 * channels, 2 * channels), nn.ReLU(), nn.Linear(2 * channels, dim))
        self.crop = crop

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not self.training and not torch.is_grad_enabled():
            return self.proj(self._pooled_by_length(tokens))
        lengths = (tokens != 0).sum(1)
        length = int(lengths.max().item()) if tokens.numel() else 1
        tokens = tokens[:, : max(length, self.n)]
        if self.training and self.crop is not None and tokens.shape[1] > self.crop:
            room = (lengths - self.crop).clamp_min(0)
            offset = (torch.rand(len(tokens)) * (room + 1).float()).long()
            idx = offset[:, None] + torch.arange(self.crop)[None, :]
            tokens = tokens.gather(1, idx)
            lengths = lengths.clamp_max(self.crop)
        ids, n_valid = self._window_ids(tokens, lengths)
        h = F.relu(self.gram(ids))  # (b, positions, channels); padded windows are exactly 0
        hmax = h.max(dim=1).values
        hmean = h.sum(1) / n_valid[:, None].float()
        return self.proj(torch.cat([hmax, hmean], dim=1))

    def _window_ids(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The n-gram id of each window (the padding row where a window reaches into padding), and the
        number of valid windows of each sequence."""
        windows = tokens.unfold(1, self.n, 1)  # (b, positions, n)
        ids = torch.zeros_like(windows[..., 0])
        for i in range(self.n):
            ids = ids * self.vocab + windows[..., i]
        n_valid = (lengths - self.n + 1).clamp_min(1)
        valid = torch.arange(ids.shape[1])[None, :] < n_valid[:, None]
        return torch.where(valid, ids, torch.full_like(ids, self.pad_id)), n_valid

    def _pooled_by_length(self, tokens: torch.Tensor, block: int = 256) -> torch.Tensor:
        """The pooled features of `forward`, without gradients and with less memory traffic: the ReLU is
        applied to the table once (the same values as applied to each looked-up row), and sequences go in
        blocks of similar length, each cut to its longest (the windows cut off are padding, zero rows)."""
        table = F.relu(self.gram.weight)
        lengths = (tokens != 0).sum(1)
        order = torch.argsort(lengths, stable=True)
        out = torch.empty(len(tokens), 2 * table.shape[1])
        for s in range(0, len(tokens), block):
            rows = order[s : s + block]
            ids, n_valid = self._window_ids(tokens[rows, : max(int(lengths[rows].max()), self.n)], lengths[rows])
            h = F.embedding(ids, table)
            out[rows] = torch.cat([h.max(dim=1).values, h.sum(1) / n_valid[:, None].float()], dim=1)
        return out


class DTIModel(nn.Module):
    """Modality encoders to a shared space, fused per side, and an interaction head (logit) with an
    auxiliary activity head (weak supervision)."""

    def __init__(
        self,
        dim: int = 64,
        modalities: Sequence[str] = MODALITIES,
        dropout: float = 0.2,
        fusion: str = "mean",
        neighbour_features: int = 0,
        ecfp_input_dropout: float = 0.0,
        neighbour_head: bool = False,
    ) -> None:
        super().__init__()
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, not {fusion!r}")
        self.dim = dim
        self.fusion = fusion
        self.modalities = tuple(m for m in MODALITIES if m in modalities)
        enc: dict[str, nn.Module] = {}
        if "drug_ecfp" in self.modalities:
            enc["drug_ecfp"] = MLPEncoder(ECFP_BITS, 256, dim, dropout, False, input_dropout=ecfp_input_dropout)
        if "drug_descriptors" in self.modalities:
            enc["drug_descriptors"] = MLPEncoder(len(DESCRIPTOR_NAMES), 64, dim, dropout, standardize=True)
        # the sequence CNNs are built from their own fixed seed, so the members of an ensemble share them
        # while they stay frozen at initialisation (see DTIEnsemble)
        with torch.random.fork_rng():
            torch.manual_seed(SEQUENCE_ENCODER_SEED)
            cnn = {
                "drug_smiles": CNNEncoder(len(SMILES_VOCAB), 2, 32, dim),
                "protein_sequence": CNNEncoder(len(PROTEIN_VOCAB), 3, 32, dim, crop=256),
            }
        if "drug_smiles" in self.modalities:
            enc["drug_smiles"] = cnn["drug_smiles"]
        if "protein_sequence" in self.modalities:
            enc["protein_sequence"] = cnn["protein_sequence"]
        if "protein_composition" in self.modalities:
            enc["protein_composition"] = MLPEncoder(PROTEIN_COMPOSITION_DIM, 128, dim, dropout, standardize=True)
        self.encoders = nn.ModuleDict(enc)
        self.norms = nn.ModuleDict({m: nn.LayerNorm(dim) for m in self.modalities})
        self.gates = nn.ParameterDict(
            {m: nn.Parameter(torch.zeros(dim)) for m in self.modalities if m not in self.primary}
            if fusion == "gated"
            else {}
        )
        self.neighbour_features = neighbour_features
        self.ecfp_input_dropout = ecfp_input_dropout
        self.neighbour_encoder = (
            nn.Sequential(MLPEncoder(neighbour_features, 64, dim, dropout, standardize=True), nn.LayerNorm(dim))
            if neighbour_features
            else None
        )
        self.neighbour_head = (
            nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 1))
            if neighbour_features and neighbour_head
            else None
        )
        self.neighbours: Any = None  # tools.dti.neighbours.NeighbourIndex of the training pairs, when used
        width = (4 if neighbour_features else 3) * dim
        self.head = nn.Sequential(nn.Linear(width, 128), nn.ReLU(), nn.Dropout(dropout), nn.Linear(128, 1))
        self.activity_head = nn.Linear(width, 1)
        self.register_buffer("log_temperature", torch.tensor(-2.3))  # GRAM temperature 0.1

    @property
    def drug_modalities(self) -> tuple[str, ...]:
        return tuple(m for m in self.modalities if m in DRUG_MODALITIES)

    @property
    def protein_modalities(self) -> tuple[str, ...]:
        return tuple(m for m in self.modalities if m in PROTEIN_MODALITIES)

    def embed(
        self, inputs: dict[str, torch.Tensor], names: Sequence[str], memo: dict[int, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Per-modality embeddings (n, dim) of the given input arrays. `memo` (encoder id -> output) lets
        ensemble members that share an encoder run it once."""
        out = {}
        for m in names:
            enc = self.encoders[m]
            raw = memo.get(id(enc)) if memo is not None else None
            if raw is None:
                raw = enc(inputs[INPUT_OF[m]])
                if memo is not None:
                    memo[id(enc)] = raw
            out[m] = self.norms[m](raw)
        return out

    @property
    def primary(self) -> tuple[str, ...]:
        """Modalities the gated fusion is anchored on (never dropped there); empty for mean fusion."""
        if self.fusion != "gated":
            return ()
        return tuple(m for m in PRIMARY_MODALITIES if m in self.modalities)

    def fuse(self, embs: dict[str, torch.Tensor], mask: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Fused side vector of the kept modality embeddings (mask: per-sample 0/1 per modality).

        Mean fusion averages the kept embeddings; gated fusion adds the gated other modalities to the
        side's primary embedding (mean fusion where the side has no primary modality).
        """
        base = [m for m in embs if m in self.primary]
        if base:
            out = embs[base[0]]
            for m in embs:
                if m != base[0]:
                    term = torch.tanh(self.gates[m]) * embs[m]
                    out = out + (term if mask is None else term * mask[m][:, None])
            return out
        if mask is None:
            return torch.stack(list(embs.values())).mean(0)
        num = sum(embs[m] * mask[m][:, None] for m in embs)
        den = sum(mask[m] for m in embs).clamp_min(1.0)
        return num / den[:, None]

    def pair_features(self, d: torch.Tensor, p: torch.Tensor, nbr: torch.Tensor | None = None) -> torch.Tensor:
        """Head input: fused drug and protein vectors, their product, and the encoded neighbourhood."""
        parts = [d, p, d * p]
        if self.neighbour_encoder is not None:
            if nbr is None:
                raise ValueError("this model reads pair neighbourhood features; pass nbr")
            parts.append(self.neighbour_encoder(nbr))
        return torch.cat(parts, dim=1)

    def interaction_logit(self, d: torch.Tensor, p: torch.Tensor, nbr: torch.Tensor | None = None) -> torch.Tensor:
        return self.logit(self.pair_features(d, p, nbr))

    def logit(self, feats: torch.Tensor) -> torch.Tensor:
        """Interaction logit of head inputs: the head, plus the neighbourhood-only head where present."""
        out = self.head(feats).squeeze(1)
        if self.neighbour_head is not None:
            out = out + self.neighbour_head(feats[:, -self.dim :]).squeeze(1)
        return out

    def config(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "modalities": list(self.modalities),
            "fusion": self.fusion,
            "neighbour_features": self.neighbour_features,
            "ecfp_input_dropout": self.ecfp_input_dropout,
            "neighbour_head": self.neighbour_head is not None,
        }


def gram_volume(vectors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Volume of the parallelotope spanned by k unit vectors per sample: sqrt(det(A A^T)), A = (k, d).

    `vectors` are k tensors of shape (n, d); returns (n,). Vectors are L2-normalised first.
    """
    a = torch.stack([F.normalize(v, dim=-1) for v in vectors], dim=-2)  # (n, k, d)
    gram = a @ a.transpose(-1, -2)
    return torch.sqrt(torch.linalg.det(gram).clamp_min(0.0) + 1e-6)


def gram_contrastive_loss(embs: dict[str, torch.Tensor], anchor: str, temperature: float) -> torch.Tensor:
    """GRAM loss over a batch of n matching samples.

    The volume spanned by the anchor modality of sample i and the other modalities of sample j is
    computed for every (i, j); logits are -volume / temperature and the matching j = i is the target,
    in both directions (anchor->rest and rest->anchor), so matching samples span small volumes and
    mismatched ones large volumes.
    """
    others = [F.normalize(v, dim=-1) for m, v in embs.items() if m != anchor]
    a = F.normalize(embs[anchor], dim=-1)
    n, k = a.shape[0], len(others) + 1
    if n < 2 or k < 2:
        return a.sum() * 0.0
    o = torch.stack(others, dim=1)  # (n, k-1, d)
    cross = torch.einsum("id,jmd->ijm", a, o)  # (n_i, n_j, k-1)
    inner = o @ o.transpose(1, 2)  # (n_j, k-1, k-1)
    gram = a.new_zeros(n, n, k, k)
    gram[:, :, 0, 0] = 1.0
    gram[:, :, 0, 1:] = cross
    gram[:, :, 1:, 0] = cross
    gram[:, :, 1:, 1:] = inner.unsqueeze(0).expand(n, n, k - 1, k - 1)
    vol = torch.sqrt(torch.linalg.det(gram).clamp_min(0.0) + 1e-6)
    logits = -vol / temperature
    target = torch.arange(n, device=a.device)
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


class AdaptiveModalityDropout:
    """Gradient-informed modality dropout.

    Keeps an exponential average of each modality's gradient norm (of the loss with respect to its
    embedding). A modality whose share of the total gradient is large dominates learning, so it is
    dropped more often: p_m = min(p_max, p_base * M * share_m). At least one drug and one protein
    modality are always kept, and the modalities in `keep` never dropped (probability 0; the shares
    are then taken over the others). With `adaptive=False` every other modality is dropped with p_base.
    """

    def __init__(
        self,
        drug: Sequence[str],
        protein: Sequence[str],
        p_base: float = 0.15,
        p_max: float = 0.5,
        adaptive: bool = True,
        momentum: float = 0.9,
        keep: Sequence[str] = (),
    ) -> None:
        self.keep = frozenset(keep)
        self.drug = tuple(drug)
        self.protein = tuple(protein)
        self.names = self.drug + self.protein
        self.p_base = p_base
        self.p_max = p_max
        self.adaptive = adaptive
        self.momentum = momentum
        self.grad_ema = dict.fromkeys(self.names, 1.0)

    def probabilities(self) -> dict[str, float]:
        free = [k for k in self.names if k not in self.keep]
        p = dict.fromkeys(self.keep & set(self.names), 0.0)
        if not self.adaptive:
            return p | dict.fromkeys(free, self.p_base)
        total = sum(self.grad_ema[k] for k in free) or 1.0
        return p | {k: min(self.p_max, self.p_base * len(free) * self.grad_ema[k] / total) for k in free}

    def observe(self, embs: dict[str, torch.Tensor]) -> None:
        """Update the gradient averages from embeddings whose `.grad` was retained."""
        for k, v in embs.items():
            if v.grad is not None and k in self.grad_ema:
                g = float(v.grad.norm(dim=1).mean()) * v.shape[0]
                self.grad_ema[k] = self.momentum * self.grad_ema[k] + (1 - self.momentum) * g

    def sample_batch(self, generator: torch.Generator) -> set[str]:
        """Modalities kept for a whole batch (GRAM pretraining)."""
        p = self.probabilities()
        keep = {k for k in self.names if torch.rand(1, generator=generator).item() >= p[k]}
        for side in (self.drug, self.protein):
            if side and not keep.intersection(side):
                keep.add(min(side, key=lambda k: p[k]))
        return keep

    def sample_masks(self, n_drug: int, n_protein: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Per-sample 0/1 keep masks for each modality (fine-tuning)."""
        p = self.probabilities()
        masks: dict[str, torch.Tensor] = {}
        for side, n in ((self.drug, n_drug), (self.protein, n_protein)):
            if not side:
                continue
            side_masks = {k: (torch.rand(n, generator=generator) >= p[k]).float() for k in side}
            none_kept = sum(side_masks.values()) == 0
            safest = min(side, key=lambda k: p[k])
            side_masks[safest] = torch.where(none_kept, torch.ones(n), side_masks[safest])
            masks.update(side_masks)
        return masks


class DTIEnsemble(nn.Module):
    """Networks trained from different seeds, used as one model: a pair's probability is the mean of theirs.

    It has the single model's scoring interface: `fuse(embed(...))` gives each side's vector as the
    members' fused vectors side by side, and `interaction_logit` splits them again and returns the
    logit of the mean probability.
    """

    def __init__(self, members: Sequence[DTIModel]) -> None:
        super().__init__()
        # members whose encoder for a modality holds identical weights (the frozen sequence CNNs) share it
        for name, enc in members[0].encoders.items():
            ref = enc.state_dict()
            for m in members[1:]:
                other = m.encoders[name].state_dict() if name in m.encoders else None
                if other is not None and all(torch.equal(ref[k], other[k]) for k in ref):
                    m.encoders[name] = enc
        self.members = nn.ModuleList(members)
        self.dim = sum(m.dim for m in members)
        self.modalities = members[0].modalities
        self._neighbours: Any = None

    @property
    def neighbours(self) -> Any:
        return self._neighbours if self._neighbours is not None else self.members[0].neighbours

    @neighbours.setter
    def neighbours(self, index: Any) -> None:
        self._neighbours = index
        for m in self.members:
            m.neighbours = index

    @property
    def drug_modalities(self) -> tuple[str, ...]:
        return self.members[0].drug_modalities

    @property
    def protein_modalities(self) -> tuple[str, ...]:
        return self.members[0].protein_modalities

    def embed(self, inputs: dict[str, torch.Tensor], names: Sequence[str]) -> dict[str, torch.Tensor]:
        memo: dict[int, torch.Tensor] = {}
        return {f"member{k}": m.fuse(m.embed(inputs, names, memo)) for k, m in enumerate(self.members)}

    def fuse(self, embs: dict[str, torch.Tensor], mask: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        return torch.cat(list(embs.values()), dim=1)

    def interaction_logit(self, d: torch.Tensor, p: torch.Tensor, nbr: torch.Tensor | None = None) -> torch.Tensor:
        sizes = [m.dim for m in self.members]
        probs = [
            torch.sigmoid(m.interaction_logit(dk, pk, nbr))
            for m, dk, pk in zip(self.members, d.split(sizes, dim=1), p.split(sizes, dim=1), strict=True)
        ]
        return torch.logit(torch.stack(probs).mean(0), eps=1e-6)

    def config(self) -> dict[str, Any]:
        return {"members": [m.config() for m in self.members]}
