"""Product metadata readers: Landsat MTL (.txt ODL and .json), Sentinel-2 MTD XML and tileInfo.json.

Every reader returns `{group: {key: value-as-text}}` with nested groups flattened to their innermost
name, so that the same key in two groups (C2 L2 has REFLECTANCE_MULT_BAND_n both for L1 and for L2)
stays apart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tools.errors import InvalidInput

Groups = dict[str, dict[str, str]]


def read_mtl_txt(path: Path) -> Groups:
    """Parse a Landsat MTL.txt (ODL: GROUP = X ... KEY = VALUE ... END_GROUP = X)."""
    groups: Groups = {}
    stack: list[str] = []
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InvalidInput(f"Cannot read the metadata file {path.name}: {exc}.") from exc
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line == "END" or "=" not in line:
            continue
        key, _, value = (s.strip() for s in line.partition("="))
        if key == "GROUP":
            stack.append(value)
            groups.setdefault(value, {})
        elif key == "END_GROUP":
            if stack:
                stack.pop()
        else:
            groups.setdefault(stack[-1] if stack else "", {})[key] = value.strip('"')
    if not any(groups.values()):
        raise InvalidInput(f"{path.name} holds no KEY = VALUE metadata.", hint="Pass the product's MTL.txt file.")
    return groups


def read_mtl_json(path: Path) -> Groups:
    """Parse a Landsat Collection-2 MTL.json ({"LANDSAT_METADATA_FILE": {group: {key: value}}})."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path.name} is not readable JSON metadata: {exc}.") from exc
    groups: Groups = {}

    def walk(name: str, node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, dict):
                    groups.setdefault(k, {})
                    walk(k, v)
                else:
                    groups.setdefault(name, {})[k] = "" if v is None else str(v)

    walk("", data)
    if not any(groups.values()):
        raise InvalidInput(f"{path.name} holds no metadata values.", hint="Pass the product's MTL.json file.")
    return groups


def read_s2_xml(path: Path) -> Groups:
    """The few values of a Sentinel-2 MTD_MSIL1C/MTD_MSIL2A.xml that radiometry needs."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path.name}: {exc}.") from exc
    out: dict[str, str] = {}
    for tag in ("PRODUCT_URI", "PROCESSING_BASELINE", "PRODUCT_TYPE", "SPACECRAFT_NAME", "PRODUCT_START_TIME",
                "QUANTIFICATION_VALUE", "BOA_QUANTIFICATION_VALUE", "Cloud_Coverage_Assessment"):
        m = re.search(rf"<{tag}[^>]*>([^<]+)</{tag}>", text)
        if m:
            out[tag] = m.group(1).strip()
    offsets = re.findall(r"<(RADIO_ADD_OFFSET|BOA_ADD_OFFSET)\s+band_id=\"(\d+)\"\s*>([-\d.]+)<", text)
    for tag, band, value in offsets:
        out[f"{tag}_{band}"] = value
    return {"S2_PRODUCT": out}


def read_tileinfo(path: Path) -> Groups:
    """The values of an AWS Sentinel-2 tileInfo.json (productName holds level and baseline)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path.name} is not readable JSON: {exc}.") from exc
    out = {k: str(v) for k, v in data.items() if not isinstance(v, (dict, list))}
    return {"S2_PRODUCT": out}


def lookup(groups: Groups, key: str, prefer: tuple[str, ...] = ()) -> str | None:
    """`key` from the first group of `prefer` that has it, else from any group."""
    for g in prefer:
        if key in groups.get(g, {}):
            return groups[g][key]
    for values in groups.values():
        if key in values:
            return values[key]
    return None


def lookup_float(groups: Groups, key: str, prefer: tuple[str, ...] = ()) -> float | None:
    value = lookup(groups, key, prefer)
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        return None
