"""Molecule pictures with the atoms that drive a score highlighted (RDKit depiction).

An atom is highlighted when its occlusion weight (`tools.dti.occlusion`) is at least `THRESHOLD` of the largest
in the molecule: red where it supports binding (switching its bits off lowers the score), blue where it works
against it, deeper for larger weights. A bond between two highlighted atoms takes the colour of the stronger one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.atomic import write_bytes, write_text

THRESHOLD = 0.2
PANEL = (300, 260)  # pixels per molecule in a grid
PER_ROW = 4


def atom_colours(weights: Sequence[float]) -> dict[int, tuple[float, float, float]]:
    """The highlighted atoms and their colours: red (supports binding) or blue (against), deeper when larger."""
    scale = max((abs(float(w)) for w in weights), default=0.0) or 1.0
    out = {}
    for i, w in enumerate(weights):
        w = float(w)
        if abs(w) >= THRESHOLD * scale and w != 0.0:
            depth = 0.25 + 0.6 * abs(w) / scale
            out[i] = (1.0, 1.0 - depth, 1.0 - depth) if w > 0 else (1.0 - depth, 1.0 - depth, 1.0)
    return out


def bond_colours(mol: Any, atoms: dict[int, tuple[float, float, float]],
                 weights: Sequence[float]) -> dict[int, tuple[float, float, float]]:
    """The bonds between two highlighted atoms, coloured as the atom of larger |weight|."""
    out = {}
    for bond in mol.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in atoms and b in atoms:
            out[bond.GetIdx()] = atoms[a] if abs(weights[a]) >= abs(weights[b]) else atoms[b]
    return out


def _prepared(mol: Any) -> Any:
    from rdkit.Chem.Draw import rdMolDraw2D

    return rdMolDraw2D.PrepareMolForDrawing(mol)


def _draw(drawer: Any, mols: list[Any], weights: list[Sequence[float]], legends: list[str]) -> None:
    atom_maps = [atom_colours(w) for w in weights]
    bond_maps = [bond_colours(m, a, w) for m, a, w in zip(mols, atom_maps, weights, strict=True)]
    opts = drawer.drawOptions()
    opts.legendFontSize = 16
    opts.clearBackground = True
    if len(mols) == 1:
        drawer.DrawMolecule(_prepared(mols[0]), legend=legends[0], highlightAtoms=list(atom_maps[0]),
                            highlightAtomColors=atom_maps[0], highlightBonds=list(bond_maps[0]),
                            highlightBondColors=bond_maps[0])
    else:
        drawer.DrawMolecules([_prepared(m) for m in mols], legends=legends,
                             highlightAtoms=[list(a) for a in atom_maps], highlightAtomColors=atom_maps,
                             highlightBonds=[list(b) for b in bond_maps], highlightBondColors=bond_maps)
    drawer.FinishDrawing()


def grid_shape(n: int, per_row: int = PER_ROW) -> tuple[int, int]:
    """(columns, rows) of a grid of `n` molecules."""
    cols = max(1, min(per_row, n))
    return cols, -(-n // cols)


def draw_grid(mols: list[Any], weights: list[Sequence[float]], legends: list[str], out: Path,
              per_row: int = PER_ROW) -> Path:
    """A PNG grid of `mols` (at most `per_row` a row), each with its driving atoms highlighted."""
    from rdkit.Chem.Draw import rdMolDraw2D

    if not mols:
        raise ValueError("draw_grid needs at least one molecule")
    cols, rows = grid_shape(len(mols), per_row)
    w, h = PANEL
    drawer = rdMolDraw2D.MolDraw2DCairo(cols * w, rows * h, w, h) if len(mols) > 1 else \
        rdMolDraw2D.MolDraw2DCairo(w, h)
    _draw(drawer, mols, weights, legends)
    return write_bytes(out, drawer.GetDrawingText())


def draw_svg(mol: Any, weights: Sequence[float], out: Path, size: tuple[int, int] = (420, 320)) -> Path:
    """An SVG of `mol` with its driving atoms highlighted."""
    from rdkit.Chem.Draw import rdMolDraw2D

    drawer = rdMolDraw2D.MolDraw2DSVG(*size)
    _draw(drawer, [mol], [weights], [""])
    return write_text(out, drawer.GetDrawingText())


def draw_png(mol: Any, weights: Sequence[float], legend: str, out: Path, size: tuple[int, int] = (520, 400)) -> Path:
    """A PNG of `mol` with its driving atoms highlighted and `legend` below it."""
    from rdkit.Chem.Draw import rdMolDraw2D

    drawer = rdMolDraw2D.MolDraw2DCairo(*size)
    _draw(drawer, [mol], [weights], [legend])
    return write_bytes(out, drawer.GetDrawingText())
