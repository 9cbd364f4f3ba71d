"""What a small model reads about the tools: a compact catalogue, and the few tools bound per model call.

A full tool list (47 tools with their JSON schemas, about 18,000 tokens) takes a 1.5B model on two CPU
cores minutes to read, and drowns the question. So the agent's system prompt carries a compact
catalogue instead (`catalogue`: each tool's name and the first line of its description, grouped by
family, and the bundled samples folded by folder), which is the same text for every question and every
step, so an endpoint's prompt cache keeps it. Each model call binds the full schemas of a few tools
only: those `select_tools` picks from the question by a lexical match over the tools' names,
descriptions and argument descriptions (any tool the question names comes first), plus the tools the
run has already called.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.connection import ToolInfo

LINE_CHARS = 60
SAMPLE_PREFIX = "sample://"
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "give", "given", "has",
    "have", "how", "i", "in", "into", "is", "it", "its", "me", "of", "on", "or", "over", "per", "please", "than",
    "that", "the", "their", "them", "then", "this", "to", "use", "using", "was", "what", "when", "where", "which",
    "while", "who", "with", "within", "you", "your", "decimals", "decimal", "digits", "one", "two", "three",
    "four", "step", "steps", "compute", "call", "tool", "tools", "bundled", "value", "values", "answer",
})


def first_line(description: str, limit: int = LINE_CHARS) -> str:
    """The first sentence of a tool description, at most `limit` characters."""
    text = " ".join((description or "").strip().split("\n\n")[0].split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    text = m.group(1) if m else text
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def family(name: str) -> str:
    return name.split("_", 1)[0]


def fold_resources(uris: Iterable[str]) -> list[str]:
    """The bundled samples as a model should name them: a folder of band files once (a scene is passed as
    its folder), READMEs and licence texts left out."""
    uris = sorted(uris)
    by_folder: dict[str, list[str]] = {}
    for u in uris:
        by_folder.setdefault(u.rsplit("/", 1)[0], []).append(u)
    out: list[str] = []
    for folder, files in by_folder.items():
        if "/licenses" in folder:
            continue
        rasters = [f for f in files if f.lower().endswith((".tif", ".tiff", ".jp2"))]
        depth = folder.removeprefix(SAMPLE_PREFIX).count("/")
        if len(rasters) >= 3 and depth >= 1:
            out.append(f"{folder} (a scene: pass the folder)")
            continue
        out.extend(f for f in files if not f.rsplit("/", 1)[-1].upper().startswith(("README", "LICENSE")))
    return out


def signature(info: ToolInfo) -> str:
    """`name(required, arguments)`: what a call cannot leave out."""
    required = info.input_schema.get("required", []) if isinstance(info.input_schema, Mapping) else []
    return f"{info.name}({', '.join(required)})"


JOB_TOOLS = "jobs_"  # the agent follows a job handle itself (agents.jobs), so the model never needs them


def catalogue(infos: Mapping[str, ToolInfo]) -> str:
    """One line a tool, grouped by family in the server's order: `name(required arguments): what it does`. The job
    tools are left out: a call that becomes a job is waited for by the agent, not by the model."""
    lines: list[str] = []
    last = None
    for name, info in infos.items():
        if name.startswith(JOB_TOOLS):
            continue
        fam = family(name)
        if fam != last:
            lines.append(f"[{fam}]")
            last = fam
        lines.append(f"{signature(info)}: {first_line(info.description)}")
    return "\n".join(lines)


# lexical selection ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_EXAMPLES = re.compile(r"e\.g\.,?\s*([^.;)]*)", re.IGNORECASE)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-case word stems of `text` without stopwords (`eo_spectral_index` gives eo, spectral, index)."""
    stems = (_stem(w) for w in _WORD.findall(text.lower().replace("_", " ")) if not w.isdigit())
    return [w for w in stems if w not in STOPWORDS]


def _schema_text(schema: Mapping[str, object], names: bool = True) -> str:
    """The argument names (with `names`), descriptions and enum values of a tool's input schema, as text."""
    parts: list[str] = []
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    for pname, prop in (props or {}).items() if isinstance(props, Mapping) else ():
        if names:
            parts.append(pname)
        if isinstance(prop, Mapping):
            parts.append(str(prop.get("description", "")))
            parts.extend(str(e) for e in prop.get("enum", []) or [] if e is not None)
    return " ".join(parts)


@dataclass(frozen=True)
class ToolIndex:
    """Weighted word bags of every tool, and how rare each word is among the tools."""

    bags: dict[str, Counter[str]]
    idf: dict[str, dict[str, float]]
    order: tuple[str, ...]
    required: dict[str, tuple[str, ...]]
    makes: dict[str, set[str]]
    inputs: dict[str, set[str]]

    @classmethod
    def build(cls, infos: Mapping[str, ToolInfo]) -> ToolIndex:
        bags: dict[str, Counter[str]] = {}
        for name, info in infos.items():
            bag: Counter[str] = Counter()
            for w in words(name):
                bag[w] += 3.0
            for w in words(first_line(info.description, 400)):
                bag[w] += 2.0
            for w in words(info.description):
                bag[w] += 1.0
            schema = _schema_text(info.input_schema)
            for w in words(_schema_text(info.input_schema, names=False)):
                bag[w] += 1.0
            for name_word in words(" ".join((info.input_schema or {}).get("properties", {}) or {})):
                bag[name_word] += 0.25   # an argument's name says what the tool takes, not what it does
            for w in words(" ".join(_EXAMPLES.findall(info.description + " " + schema))):
                bag[w] += 3.0   # the values an argument's examples give are the words a question uses
            bags[name] = bag
        idf: dict[str, dict[str, float]] = {}
        for group in [None, *sorted({family(n) for n in bags})]:  # over all tools, and within each family
            members = [b for n, b in bags.items() if group is None or family(n) == group]
            df = Counter(w for bag in members for w in bag)
            idf["" if group is None else group] = {w: math.log(1.0 + len(members) / c) for w, c in df.items()}
        required = {n: tuple((i.input_schema or {}).get("required", []) or []) for n, i in infos.items()}
        makes = {n: set(_WORD.findall(first_line(i.description, 400).lower())) & FILE_KINDS for n, i in infos.items()}
        inputs = {}
        for n, i in infos.items():
            props = (i.input_schema or {}).get("properties", {}) or {}
            text = " ".join(str((props.get(r) or {}).get("description", "")) for r in required[n])
            inputs[n] = set(_WORD.findall(text.lower())) & FILE_KINDS
        return cls(bags, idf, tuple(infos), required, makes, inputs)

    def scores(self, question: str, within: str | None = None,
               weights: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each tool's match to `question`; words weighed by their rarity among all tools, or among the
        tools of family `within` (so that words every tool of a family shares count for little), times
        `weights` (a word already covered by a chosen tool counts less)."""
        data = data_words(question) | located_kinds(question)   # "the scene" the question's path is
        q = Counter(w for w in words(strip_locations(question)) if w not in data)
        idf = self.idf[within if within is not None else ""]
        out = {}
        for name, bag in self.bags.items():
            if within is not None and family(name) != within:
                continue
            s = 0.0
            for w, qn in q.items():
                if w in bag:
                    s += idf[w] * math.log(1.0 + bag[w]) * min(qn, 2) * (weights or {}).get(w, 1.0)
            out[name] = s
        return out

    def cover(self, question: str, within: str, k: int) -> list[str]:
        """Up to `k` tools of family `within` chosen greedily to cover the question's words: each pick is the
        best match to the words the tools already picked do not hold, so the picks complement each other
        (the tool that makes a product, then the one that measures it)."""
        weights: dict[str, float] = {}
        chosen: list[str] = []
        given = located_kinds(question)
        for _ in range(k):
            scores = self.scores(question, within, weights)
            for n in scores:
                if given & set(self.required[n]):
                    scores[n] = scores[n] * 1.5 + 1.0   # the question holds what the tool needs
                if chosen and self.inputs[n] & self.makes[chosen[0]]:
                    scores[n] = scores[n] * 1.5 + 1.0   # it takes what the first pick makes (a GeoTIFF...)
            ranked = sorted((n for n in scores if n not in chosen and scores[n] > 0),
                            key=lambda n: (-scores[n], self.order.index(n)))
            if not ranked:
                break
            chosen.append(ranked[0])
            for w in self.bags[ranked[0]]:
                weights[w] = weights.get(w, 1.0) * 0.25
        return self.makers_first(chosen, given, self.scores(question, within), k)

    def makers_first(self, chosen: list[str], given: set[str], scores: Mapping[str, float], k: int) -> list[str]:
        """`chosen` with a tool that makes the file the first pick needs put before it, when the question gives
        no such file (`eo_area` needs a raster: `eo_spectral_index`, which writes one, goes first): a pick that
        makes it, else the family's best-matching tool that does (in place of the last pick)."""
        if not chosen:
            return chosen
        first = chosen[0]
        needs = set(self.required[first]) & set(FILE_ARGUMENTS)
        if not needs or needs & given or not self.inputs[first]:
            return chosen
        makers = [n for n in chosen[1:] if self.makes[n] & self.inputs[first]]
        if not makers:
            makers = sorted((n for n in scores if n not in chosen and self.makes[n] & self.inputs[first]
                             and not set(self.required[n]) & set(FILE_ARGUMENTS) - given),
                            key=lambda n: (-scores[n], self.order.index(n)))[:1]
            chosen = chosen[: max(k - 1, 1)]
        return [makers[0], *[n for n in chosen if n != makers[0]]] if makers else chosen


_LOCATION = re.compile(r"[a-z][a-z0-9+.-]*://\S+|(?<![\w])[~.]?/[\w./-]+")


def strip_locations(text: str) -> str:
    """`text` without URIs and file paths: what they name is data, not what to do with it."""
    return _LOCATION.sub(" ", text)


def data_words(text: str) -> set[str]:
    """The words that name the data `text` points at: the letter runs of its URIs and paths (`landsat`,
    `sentinel` from `sample://eo/landsat8_c1_l1t`). They say which data, not what to do with it: a question
    about "the Landsat 8 scene" asks for no Landsat-only tool."""
    runs = (r for loc in _LOCATION.findall(text) for r in re.findall(r"[a-z]{3,}", loc.lower()))
    return {_stem(r) for r in runs} - {"sample", "tif", "tiff", "csv", "json", "txt", "smi", "sdf"}


FILE_KINDS = frozenset(["geotiff", "tiff", "png", "csv", "json", "jsonl", "sdf", "smi", "parquet", "npz"])
FILE_ARGUMENTS = ("path", "file", "raster", "library", "text")


def located_kinds(text: str) -> set[str]:
    """Argument names the data `text` points at can fill: `scene` for a folder of bands (a path without a
    file extension), `path`/`file`/`raster`... for a file."""
    kinds: set[str] = set()
    for loc in _LOCATION.findall(text):
        last = loc.rstrip("/.,;:?!)").rsplit("/", 1)[-1]
        if "." in last:
            kinds.update(FILE_ARGUMENTS)
            if last.lower().endswith((".tif", ".tiff")):
                kinds.add("scene")
        else:
            kinds.add("scene")
    return kinds


_TOKEN = re.compile(r"(?<![\w:/.])[^\s,;?!'\"]{4,}")
_SMILES_CHARS = re.compile(r"^[BCNOPSFIclnospr0-9@+\-\[\]()=#$%/\\.]+$")
_PROTEIN = re.compile(r"(?<![A-Za-z])[ACDEFGHIKLMNPQRSTVWY]{15,}(?![A-Za-z])")
_DIGEST = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64})(?![0-9a-fA-F])")


def carried_kinds(text: str) -> set[str]:
    """Argument names the values a question carries can fill: `smiles` for a SMILES string
    (`CC(=O)Oc1ccccc1C(O)=O`), `protein` for an amino-acid sequence, `identifier` for a hex digest."""
    kinds: set[str] = set()
    for token in _TOKEN.findall(strip_locations(text)):
        token = token.rstrip(".)")
        atoms = re.sub(r"\[[^\]]*\]", "", token)
        if (_SMILES_CHARS.match(atoms) and len(re.findall(r"[BCNOPSFIcnosp]", atoms)) >= 2
                and re.search(r"[()=#\[\]]|[A-Za-z][0-9]", token) and not _PROTEIN.fullmatch(token)):
            kinds.add("smiles")
    if _PROTEIN.search(text):
        kinds.add("protein")
    if _DIGEST.search(text):
        kinds.add("identifier")
    return kinds


def named_tools(text: str, names: Iterable[str]) -> list[str]:
    """The tools `text` names, in the order it names them."""
    found = []
    for name in names:
        m = re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text)
        if m:
            found.append((m.start(), name))
    return [n for _, n in sorted(found)]


def select_tools(question: str, infos: Mapping[str, ToolInfo], *, used: Sequence[str] = (), k: int = 3,
                 index: ToolIndex | None = None) -> list[str]:
    """The tools to bind for a model call: those the question names, else the `k` best lexical matches in
    the family the question points at (a `sample://FAMILY/` path, then the family whose tools take the values
    it carries, `carried_kinds`, else the best-matching tools' family),
    then the tools already `used` in this run. The same question and history give the same list, in the
    same order, so the bound tools (and the prompt prefix they are part of) stay the same across steps."""
    index = index or ToolIndex.build(infos)
    chosen = [n for n in named_tools(question, infos)]
    if not chosen:
        scores = index.scores(question)
        fams = Counter({family(n): 0.0 for n in infos})
        for uri_fam in re.findall(r"sample://([a-z]+)/", question):
            if uri_fam in fams:
                fams[uri_fam] += 1000.0
        carried = carried_kinds(question)
        for fam in {family(n) for n, i in infos.items() if carried & set((i.input_schema or {}).get("properties")
                                                                          or {})}:
            fams[fam] += 100.0     # the family whose tools take the values the question carries (a SMILES)
        best: dict[str, list[float]] = {}
        for n, s in scores.items():
            best.setdefault(family(n), []).append(s)
        for fam, ss in best.items():
            fams[fam] += sum(sorted(ss, reverse=True)[:2])
        top_family = fams.most_common(1)[0][0] if fams else None
        chosen = index.cover(question, top_family, k) if top_family else []
    for n in used:
        if n in infos and n not in chosen:
            chosen.append(n)
    return chosen


# compact schemas -----------------------------------------------------------------------------------------

DESCRIPTION_CHARS = 100


def _short(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def compact_schema(schema: Any) -> Any:
    """A JSON schema with the same properties, types, enums and required list, in fewer tokens: titles and
    defaults dropped (an argument left out takes its default; a small model shown the defaults writes them
    all out, a token at a time), `null` alternatives of optional arguments dropped, descriptions cut to one
    line."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default") or (key == "additionalProperties" and not isinstance(value, Mapping)):
            continue
        if key == "description":
            out[key] = _short(value)
        elif key == "type" and isinstance(value, list) and "null" in value and len(value) > 1:
            rest = [t for t in value if t != "null"]
            out[key] = rest[0] if len(rest) == 1 else rest
        elif key == "anyOf" and isinstance(value, list) and any(v == {"type": "null"} for v in value):
            rest = [compact_schema(v) for v in value if v != {"type": "null"}]
            if len(rest) == 1 and isinstance(rest[0], Mapping):
                out.update(rest[0])
            else:
                out[key] = rest
        elif key == "enum" and isinstance(value, list):
            out[key] = [v for v in value if v is not None]
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: compact_schema(v) for k, v in value.items()}
        else:
            out[key] = compact_schema(value)
    return out


def tool_description(description: str) -> str:
    """A tool's description without its bounds paragraph (the settings that limit it)."""
    paragraphs = [p.strip() for p in (description or "").split("\n\n") if p.strip()]
    return "\n\n".join(p for p in paragraphs if not p.startswith("Bounds"))


def openai_tool(info: ToolInfo, question: str | None = None,
                tool_words: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The OpenAI `tools` entry for `info`, compacted (`compact_schema`, `tool_description`); with `question`,
    its arguments fitted to that question first (`fit_schema`)."""
    schema = info.input_schema or {"type": "object"}
    if question is not None:
        schema = fit_schema(schema, question, tool_words)
    return {"type": "function", "function": {"name": info.name, "description": tool_description(info.description),
                                             "parameters": compact_schema(schema)}}


# schemas fitted to a question ----------------------------------------------------------------------------

_PARENS = re.compile(r"\(([^()]*)\)")
LOCATED = frozenset([*FILE_ARGUMENTS, "scene"])   # shown when the question holds a path, not for a word
GENERIC = frozenset({"default", "eg", "e", "g", "file", "name", "names", "number", "list", "string", "true", "false",
                     "task"})


def _cue_words(pname: str, prop: Mapping[str, Any]) -> set[str]:
    """The words that show a question needs optional argument `pname`: its name, its enum values, and the
    examples and cases its description gives (`e.g. ...`, `(...)`), not the description's prose."""
    cues = set(words(pname))
    desc = str(prop.get("description", ""))
    for text in [*_EXAMPLES.findall(desc), *_PARENS.findall(desc)]:
        cues.update(words(text))
    for alt in [prop, *(prop.get("anyOf") or [])]:
        if isinstance(alt, Mapping):
            for value in alt.get("enum") or []:
                cues.update(words(str(value)))
    return cues - GENERIC


def _question_words(question: str, tool_words: set[str]) -> set[str]:
    """The question's words, without URIs and paths and without the words of tool names it mentions."""
    return set(words(strip_locations(question))) - tool_words


def fit_schema(schema: Mapping[str, Any], question: str, tool_words: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`schema` (a tool's input schema as the server gives it, defaults included) as a small model should see
    it for `question`: every required argument; when nothing is required, every argument without a default
    (the inputs to choose from, such as `text` or `path`); the file or scene arguments the question's paths
    can fill; one-letter arguments (`n`), whose name cues nothing; and the other optional arguments only
    when the question gives a cue for them (`_cue_words`). Enum values the question names are listed first.

    A small model shown every optional argument fills them all in (a `mask` of made-up classes, an `exclude`
    naming a tool instead of a file), and the call fails; an argument left out takes the tool's default.
    `tool_words` are the words of the server's tool names, which cue nothing (a question that names
    `eo_cloud_mask` does not ask for a `mask` argument)."""
    return _fit(schema, _question_words(question, set(tool_words)), located_kinds(question), top=True)


def _fit(schema: Mapping[str, Any], asked: set[str], located: set[str], *, top: bool) -> dict[str, Any]:
    """`fit_schema` on one object schema; an object argument's own properties are fitted the same way
    (`graph`'s `weights` and `features` only on a cue), keeping them all when the question cues none."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return dict(schema)
    required = list(schema.get("required") or [])
    kept: dict[str, Any] = {}
    for pname, prop in props.items():
        if not isinstance(prop, Mapping):
            kept[pname] = prop
            continue
        shown = (pname in required or len(pname) == 1
                 or (top and pname in located)
                 or (top and not required and "default" not in prop)      # one of the inputs to choose from
                 or (pname not in LOCATED and bool(_cue_words(pname, prop) & asked)))
        if shown:
            kept[pname] = _nested(_enum_first(prop, asked), asked, located)
    if not top and not kept:
        return dict(schema)
    return {**schema, "properties": kept}


def _nested(prop: Mapping[str, Any], asked: set[str], located: set[str]) -> Any:
    """An object argument (or an alternative of one) with its properties fitted."""
    if isinstance(prop.get("properties"), Mapping):
        return _fit(prop, asked, located, top=False)
    if isinstance(prop.get("anyOf"), list):
        return {**prop, "anyOf": [_nested(a, asked, located) if isinstance(a, Mapping) else a for a in prop["anyOf"]]}
    return prop


def _enum_first(prop: Mapping[str, Any], asked: set[str]) -> Any:
    """`prop` with the enum values whose words the question holds moved to the front (the rest keep their
    order): a small model tends to take the first value listed."""
    def order(values: list[Any]) -> list[Any]:
        hit = [v for v in values if set(words(str(v))) & asked]
        return hit + [v for v in values if v not in hit]

    if isinstance(prop.get("enum"), list):
        return {**prop, "enum": order(list(prop["enum"]))}
    if isinstance(prop.get("anyOf"), list):
        return {**prop, "anyOf": [_enum_first(a, asked) if isinstance(a, Mapping) else a for a in prop["anyOf"]]}
    return prop

