"""The portable form of a tool's input schema: one JSON type per `type`, and no `null` where leaving out means null.

Hosts read tool schemas differently. Some map them onto a dialect with a single `type` per schema (the OpenAPI
subset behind Gemini function declarations), where a list such as `["string", "null"]` makes the tool rejected or
its constraint dropped; the MCP Inspector warns about every such list (its `type-union` rule). So here:

- an optional property whose default is null is published without its null branch: leaving it out already means
  null, so nothing is lost, and most such properties become one plain type (`{"type": "string"}`);
- a property that holds several types is written as `anyOf` of single-type branches, never as a `type` list;
- an `anyOf` left with one branch is written in place.

The server still accepts an explicit null for those optional properties (its argument models are unchanged).
"""

from __future__ import annotations

from typing import Any

# Keywords that constrain only instances of one JSON type, so that a `type` list can be split into branches.
_NUMBER_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
TYPE_KEYWORDS = {
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {"properties", "additionalProperties", "required", "minProperties", "maxProperties"},
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": _NUMBER_KEYWORDS,
    "integer": _NUMBER_KEYWORDS,
    "boolean": set(),
    "null": set(),
}
_JSON_TYPES = {"boolean": bool, "string": str, "null": type(None), "array": list, "object": dict}


def portable(schema: Any) -> Any:
    """`schema` in the portable form described in the module docstring (a new object; the input is not changed)."""
    if isinstance(schema, list):
        return [portable(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: portable(sub) for name, sub in value.items()}
        else:
            out[key] = portable(value)
    props = out.get("properties")
    if isinstance(props, dict):
        required = set(out.get("required", []))
        for name, sub in props.items():
            if name not in required and isinstance(sub, dict) and "default" in sub and sub["default"] is None:
                props[name] = without_null(sub)
    if isinstance(out.get("type"), list):
        out = _split_types(out)
    return _unwrapped(out)


def without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without its null branch (an `anyOf` option, a `type` entry or an `enum` value) and null default."""
    out = {k: v for k, v in schema.items() if not (k == "default" and v is None)}
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if not _is_null(o)]
        if kept and len(kept) < len(options):
            out["anyOf"] = kept
    kinds = out.get("type")
    if isinstance(kinds, list) and "null" in kinds and len(kinds) > 1:
        out["type"] = [k for k in kinds if k != "null"]
        if len(out["type"]) == 1:
            out["type"] = out["type"][0]
    elif kinds is None and isinstance(out.get("enum"), list) and None in out["enum"]:
        out["enum"] = [v for v in out["enum"] if v is not None]
    if isinstance(out.get("type"), str) and isinstance(out.get("enum"), list):
        out["enum"] = [v for v in out["enum"] if v is not None]
    return _unwrapped(out)


def _is_null(option: Any) -> bool:
    return isinstance(option, dict) and (option.get("type") == "null" or option.get("enum") == [None]
                                         or ("const" in option and option["const"] is None and len(option) == 1))


def _unwrapped(schema: dict[str, Any]) -> dict[str, Any]:
    """An `anyOf` of one branch written in place, where no keyword of the branch is also beside the `anyOf`."""
    options = schema.get("anyOf")
    if not (isinstance(options, list) and len(options) == 1 and isinstance(options[0], dict)):
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    if set(options[0]) & set(rest):
        return schema
    return {**options[0], **rest}


def _split_types(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema whose `type` is a list, as `anyOf` of one branch per type with that type's keywords."""
    kinds: list[str] = schema["type"]
    if len(kinds) == 1:
        return {**schema, "type": kinds[0]}
    specific = set().union(*(TYPE_KEYWORDS.get(k, set()) for k in kinds)) | {"enum"}
    shared = {k: v for k, v in schema.items() if k != "type" and k not in specific}
    branches = []
    for kind in kinds:
        branch: dict[str, Any] = {"type": kind}
        branch.update({k: v for k, v in schema.items() if k in TYPE_KEYWORDS.get(kind, set())})
        if "enum" in schema:
            values = [v for v in schema["enum"] if _has_type(v, kind)]
            if not values:
                continue
            branch["enum"] = values
        branches.append(branch)
    return {**shared, "anyOf": branches}


def _has_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES.get(kind, object))
