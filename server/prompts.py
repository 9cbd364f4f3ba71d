"""The five workflows as MCP prompts (`eo`, `nid`, `dti`, `qa`, `graph`), and argument completion.

A host that shows prompts offers them as slash commands. Each renders one user message: the workflow's steps as
the exact tool calls to make, in order, with the arguments filled in, and how to state the answer, so the host's
own model runs the workflow the way `research-mcp agent` does. Arguments arrive as text (the protocol's form);
each is checked and converted here, and a bad one is refused with what is wrong and what would do.

`completion/complete` completes: bundled sample URIs (scenes, NID texts, molecule libraries, documents), index and
parameter names, NID data sets, DTI target ids and model names, graph tasks, generators, formats and schemes, and
the files of the output folder for the `output://{+path}` template.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Completion, PromptReference, ResourceTemplateReference
from pydantic import Field

from tools.paths import OUTPUT_SCHEME, SAMPLE_DIR, SAMPLE_SCHEME

MAX_COMPLETIONS = 100  # the protocol's bound on values per completion
PROMPT_FAMILY = {"eo": "eo", "nid": "nid", "dti": "dti", "qa": "longctx", "graph": "graph"}
LST_AND_PARAMETERS = ["LST", "FVC", "LAI", "albedo"]
NID_DATASETS = ["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log", "serialversionuid"]


def _refuse(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _integer(name: str, text: str | None, default: int, lo: int, hi: int) -> int:
    if text is None or not str(text).strip():
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise _refuse(f"Argument {name!r} must be a whole number from {lo} to {hi}; got {text!r}.") from None
    if not lo <= value <= hi:
        raise _refuse(f"Argument {name!r} must lie from {lo} to {hi}; got {value}.")
    return value


def _number(name: str, text: str | None) -> float | None:
    if text is None or not str(text).strip():
        return None
    try:
        return float(str(text).strip())
    except ValueError:
        raise _refuse(f"Argument {name!r} must be a number, e.g. 0.3; got {text!r}.") from None


def _choice(name: str, text: str | None, default: str, known: list[str]) -> str:
    value = (text or "").strip() or default
    if value not in known:
        raise _refuse(f"Argument {name!r} must be one of {', '.join(known)}; got {value!r}.")
    return value


def _items(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _call(tool: str, args: dict[str, Any]) -> str:
    return f"`{tool}` with {json.dumps(args)}"


def _message(goal: str, steps: list[str], closing: str) -> str:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
    return (f"{goal}\n\nUse the research-mcp tools, one call at a time, and check each result before the next "
            f"(numbers plausible, no error; if a call fails, read its message, fix the arguments and call again).\n\n"
            f"{numbered}\n\n{closing}")


# ---------------------------------------------------------------------------------------------- prompts


def eo(
    scene: Annotated[str, Field(description="Scene folder or sample URI, e.g. sample://eo/landsat8_c1_l1t.")],
    product: Annotated[str, Field(description="Index (NDVI, EVI, NDWI...) or parameter (LST, FVC, LAI, albedo).")],
    threshold: Annotated[str | None, Field(description="Number: also report the share above it, e.g. 0.3.")] = None,
    mask: Annotated[str | None, Field(description="QA classes to mask, comma-separated, e.g. cloud,shadow.")] = None,
    question: Annotated[str | None, Field(description="The question to answer from the numbers.")] = None,
) -> str:
    """EO analysis: describe a scene, compute an index or parameter (with its quicklook), its statistics and area."""
    above = _number("threshold", threshold)
    classes = _items(mask)
    extra: dict[str, Any] = {"mask": classes} if classes else {}
    name = product.strip()
    if not name:
        raise _refuse("Argument 'product' is empty; name an index (NDVI, EVI...) or LST, FVC, LAI, albedo.")
    if name.lower() == "lst":
        compute = _call("eo_land_surface_temperature", {"scene": scene, **extra})
    elif name.lower() in ("fvc", "lai", "albedo"):
        compute = _call("eo_vegetation_parameters", {"scene": scene, "parameter": name.lower(), **extra})
    else:
        compute = _call("eo_spectral_index", {"scene": scene, "index": name, **extra})
    steps = [f"Call {_call('eo_describe_scene', {'scene': scene})}: note the sensor, date and bands.",
             f"Call {compute}. Show its quicklook picture to the user.",
             "Call `eo_statistics` with {\"raster\": <the `output` path the previous call returned>}."]
    if above is not None:
        steps.append(f"Call `eo_area` with {{\"raster\": <that output path>, \"rules\": [{{\"op\": \">\", "
                     f"\"value\": {above}}}]}}.")
    ask = f" and answer: {question}" if question else ""
    return _message(f"Analyse {name} on the scene {scene}.", steps,
                    f"Report mean, standard deviation, minimum and maximum of {name}"
                    + (f" and the share of the valid area above {above}" if above is not None else "")
                    + f"{ask}. End with a line `Answer: <value>`.")


def nid(
    path: Annotated[str | None, Field(description="Text to find identifiers in, e.g. "
                                      "sample://nid/jsonlite_MD5.txt.")] = None,
    dataset: Annotated[str | None, Field(description="Bundled data set to train on and score: tweets, eth_tokens, "
                                         "jsonlite_md5, opacus_git_log, serialversionuid.")] = None,
    mode: Annotated[str | None, Field(description="audit (DP lower bound) or inference (dataset inference).")] = None,
    model: Annotated[str | None, Field(description="Model checkpoint to audit; default: train a small one.")] = None,
    n_gids: Annotated[str | None, Field(description="Stand-ins (GIDs) per identifier, 1-63; default 7.")] = None,
    max_nids: Annotated[str | None, Field(description="Identifiers to score, 2-10000; default 20.")] = None,
) -> str:
    """NID audit: detect identifiers, generate stand-ins, score a model, then a DP audit or dataset inference."""
    text = path or "sample://nid/jsonlite_MD5.txt"
    data = _choice("dataset", dataset, "jsonlite_md5", NID_DATASETS)
    how = _choice("mode", mode, "audit", ["audit", "inference"])
    gids = _integer("n_gids", n_gids, 7, 1, 63)
    nids = _integer("max_nids", max_nids, 20, 2, 10_000)
    steps = [f"Call {_call('nid_detect', {'path': text, 'max_results': 20})}: which identifier types occur.",
             "Call `nid_generate` with {\"identifier\": <the first identifier found>, \"type\": <its type>, "
             f"\"n\": {gids}}}: same-format stand-ins that were never trained on."]
    score = {"n_gids": gids, "max_nids": nids, "recall": False}
    if model:
        steps.append(f"Call {_call('nid_score', {'model': model, 'dataset': data, **score})}.")
    else:
        steps.append(f"Call {_call('nid_train_model', {'datasets': [data], 'per_dataset': 40, 'epochs': 5})}: a "
                     "small model whose training set is known.")
        steps.append(f"Call `nid_score` with {{\"model\": <its checkpoint>, \"split\": <its split_path>, "
                     f"{json.dumps(score)[1:-1]}}}.")
    if how == "audit":
        steps.append("Call `nid_dp_audit` with {\"scores_path\": <the scores_path nid_score returned>}. Show its "
                     "plot: members' and stand-ins' score histograms and the ROC.")
        closing = "Report the eps lower bound at alpha 0.05 and what it means. End with `Answer: <eps>`."
    else:
        steps.append("Call `nid_dataset_inference` with {\"scores_path\": <the scores_path nid_score returned>}. "
                     "Show its rank histogram.")
        closing = "Report the KS p-value and whether membership is shown (p < 0.01). End with `Answer: member` or " \
                  "`Answer: not shown to be a member`."
    return _message(f"Audit a language model with natural identifiers as canaries ({how}).", steps, closing)


@cache
def _targets() -> dict[str, str]:
    """Target id -> protein sequence, from the bundled sample://dti/targets.csv."""
    path = SAMPLE_DIR / "dti" / "targets.csv"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as fh:
        return {row["id"]: row["sequence"] for row in csv.DictReader(fh)}


def dti(
    target: Annotated[str, Field(description="Protein sequence, or a target id of sample://dti/targets.csv "
                                 "(e.g. hsa:5742).")],
    library: Annotated[str | None, Field(description="Molecule library; default "
                                         "sample://dti/screening_library.smi.")] = None,
    top_k: Annotated[str | None, Field(description="Hits to keep, 1-1000; default 10.")] = None,
    model: Annotated[str | None, Field(description="DTI model: default, human_cold, human_random, "
                                       "biosnap_cluster or a trained one.")] = None,
) -> str:
    """DTI screening: validate a library, check the model, screen it against a target, explain the top hit."""
    wanted = target.strip()
    if not wanted:
        raise _refuse("Argument 'target' is empty; pass a protein sequence or a target id such as hsa:5742.")
    seq = _targets().get(wanted, wanted)
    if ":" in wanted and wanted not in _targets():
        known = ", ".join(list(_targets())[:5])
        raise _refuse(f"No target {wanted!r} in sample://dti/targets.csv (ids such as {known}); pass a protein "
                      "sequence instead.")
    lib = library or "sample://dti/screening_library.smi"
    k = _integer("top_k", top_k, 10, 1, 1000)
    name = (model or "default").strip()
    steps = [f"Call {_call('dti_validate', {'path': lib, 'proteins': [seq]})}: how many molecules are valid.",
             f"Call {_call('dti_model_card', {'model': name})}: what the model was trained and evaluated on.",
             f"Call {_call('dti_screen', {'target': seq, 'library': lib, 'top_k': k, 'model': name})}. Show its "
             "grid of the top hits (atoms that drive each score in red).",
             "Call `dti_explain` with {\"smiles\": <the top hit's SMILES>, \"protein\": <the same sequence>, "
             f"\"model\": \"{name}\"}}: which substructures drive its score."]
    label = wanted if wanted in _targets() else f"a {len(seq)}-residue protein"
    return _message(f"Screen {lib} against {label} and explain the best hit.", steps,
                    "List the top hits with scores, say how far the model can be trusted (from its card), and end "
                    "with `Answer: <top hit id>`.")


def qa(
    task: Annotated[str, Field(description="The question to answer from the document.")],
    path: Annotated[str | None, Field(description="Document; default sample://longctx/alice.txt.")] = None,
    chunk_tokens: Annotated[str | None, Field(description="Tokens per chunk, 200-200000; default 8000.")] = None,
) -> str:
    """Chunked QA: split a long document into chunks, read each for the answer, then combine the answers."""
    if not task.strip():
        raise _refuse("Argument 'task' is empty; pass the question to answer.")
    doc = path or "sample://longctx/alice.txt"
    size = _integer("chunk_tokens", chunk_tokens, 8000, 200, 200_000)
    steps = [f"Call {_call('longctx_chunk', {'path': doc, 'chunk_tokens': size})}: the chunks' character spans.",
             f"Read the document ({doc}; a sample:// or output:// URI is a resource you can read) chunk by chunk, "
             "by those spans. For each chunk, as a worker that sees only that chunk, answer the task briefly or "
             "say NA.",
             "As the manager, combine the workers' non-NA answers into one answer. If the document is too long to "
             f"read, call `longctx_answer` with {{\"path\": \"{doc}\", \"task\": <the task>, \"chunk_tokens\": "
             f"{size}}} instead."]
    return _message(f"Answer from the long document {doc}: {task}", steps,
                    "Give the answer with the chunk it came from, and end with a line `Answer: ...`.")


def graph(
    tasks: Annotated[str | None, Field(description="Graph tasks, comma-separated (graph_list_tasks); default "
                                       "connectivity,shortest_path,triangle.")] = None,
    generator: Annotated[str | None, Field(description="Random graph generator, e.g. ERP, ERM, BAG; default "
                                           "ERP.")] = None,
    n_nodes: Annotated[str | None, Field(description="Nodes per graph, 2-60; default 8.")] = None,
    seeds: Annotated[str | None, Field(description="Seeds, comma-separated integers; default 0,1.")] = None,
    format: Annotated[str | None, Field(description="How prompts show the graph; default adjacency_set.")] = None,
    scheme: Annotated[str | None, Field(description="Prompt scheme; default LTM.")] = None,
) -> str:
    """Graph benchmark: generate seeded graphs, answer each task's prompt, check every answer, report accuracy."""
    from tools.graph.generate import GENERATORS
    from tools.graph.prompts import SCHEMES
    from tools.graph.serialize import FORMATS
    from tools.graph.tasks import TASKS

    chosen = _items(tasks) or ["connectivity", "shortest_path", "triangle"]
    bad = [t for t in chosen if t not in TASKS]
    if bad:
        raise _refuse(f"Unknown graph task(s) {', '.join(bad)}. Known: {', '.join(TASKS)}.")
    gen = _choice("generator", generator, "ERP", list(GENERATORS))
    n = _integer("n_nodes", n_nodes, 8, 2, 60)
    fmt = _choice("format", format, "adjacency_set", list(FORMATS))
    sch = _choice("scheme", scheme, "LTM", list(SCHEMES))
    try:
        seed_list = [int(s) for s in _items(seeds)] or [0, 1]
    except ValueError:
        raise _refuse(f"Argument 'seeds' must be integers separated by commas, e.g. 0,1; got {seeds!r}.") from None
    steps = [f"For each seed in {seed_list}, call {_call('graph_generate', {'generator': gen, 'n_nodes': n})} with "
             "that `seed`.",
             f"For each graph and each task in {chosen}, call `graph_prompt` with {{\"task\": <task>, \"graph\": "
             f"<the graph>, \"format\": \"{fmt}\", \"scheme\": \"{sch}\"}} (plus `source`/`target`/`node` when the "
             "task needs them: the smallest and largest node).",
             "Answer each prompt yourself, exactly as it asks, ending with a line `Answer: ...`, without calling "
             "graph_solve first.",
             "Call `graph_check_answer` with {\"task\": <task>, \"answer\": <your whole reply>, \"graph\": <the "
             "graph>} and the same source/target/node, for every prompt.",
             "For each task, call `graph_solve` on the first graph: its random baseline, and its drawing with the "
             "witness highlighted (show it)."]
    return _message(f"Benchmark graph reasoning on {len(seed_list)} {gen} graphs of {n} nodes.", steps,
                    "Report the accuracy per task beside its random baseline, and end with `Answer: overall "
                    "accuracy <fraction>`.")


PROMPTS: dict[str, tuple[Callable[..., str], str]] = {
    "eo": (eo, "EO analysis of a scene"),
    "nid": (nid, "NID audit of a language model"),
    "dti": (dti, "DTI screen of a molecule library"),
    "qa": (qa, "Chunked QA over a long document"),
    "graph": (graph, "Graph reasoning benchmark"),
}


class WorkflowPrompt(Prompt):
    """A prompt that refuses a missing argument as invalid parameters, naming it and what it takes."""

    async def render(self, arguments: dict[str, Any] | None, context: Any) -> Any:
        given = arguments or {}
        missing = [a for a in self.arguments or [] if a.required and not str(given.get(a.name) or "").strip()]
        if missing:
            wanted = "; ".join(f"{a.name}: {(a.description or '').rstrip('.')}" for a in missing)
            raise _refuse(f"The {self.name} prompt needs {', '.join(a.name for a in missing)} ({wanted}).")
        unknown = sorted(set(given) - {a.name for a in self.arguments or []})
        if unknown:
            raise _refuse(f"The {self.name} prompt has no argument {', '.join(unknown)}; its arguments: "
                          f"{', '.join(a.name for a in self.arguments or [])}.")
        return await super().render(given, context)


def add_prompts(server: MCPServer, families: list[str]) -> None:
    """Register the prompts of the enabled `families`, and the completion handler."""
    for name, (fn, title) in PROMPTS.items():
        if PROMPT_FAMILY[name] in families:
            server.add_prompt(WorkflowPrompt.from_function(fn, name=name, title=title))
    server.completion()(complete)


# ---------------------------------------------------------------------------------------------- completion


def _samples(family: str, suffixes: tuple[str, ...] = (), folders: bool = False) -> list[str]:
    root = SAMPLE_DIR / family
    if not root.is_dir():
        return []
    found = [p for p in sorted(root.iterdir()) if (p.is_dir() if folders else p.is_file())
             and p.name != "README.txt" and (not suffixes or p.name.endswith(suffixes))]
    return [f"{SAMPLE_SCHEME}{family}/{p.name}" for p in found]


def _index_names() -> list[str]:
    from tools.eo.indices import catalogue

    return LST_AND_PARAMETERS + sorted(catalogue())


def _dti_models() -> list[str]:
    from tools.dti.registry import model_names

    return model_names()


def _graph_names(kind: str) -> list[str]:
    if kind == "tasks":
        from tools.graph.tasks import TASKS

        return list(TASKS)
    if kind == "generator":
        from tools.graph.generate import GENERATORS

        return list(GENERATORS)
    if kind == "format":
        from tools.graph.serialize import FORMATS

        return list(FORMATS)
    from tools.graph.prompts import SCHEMES

    return list(SCHEMES)


def _output_files() -> list[str]:
    from tools.paths import output_dir

    root = output_dir()
    files = sorted((p for p in root.rglob("*") if p.is_file() and not any(s.startswith(".") for s in
                                                                           p.relative_to(root).parts)),
                   key=lambda p: -p.stat().st_mtime)
    return [p.relative_to(root).as_posix() for p in files]


CANDIDATES: dict[tuple[str, str], Callable[[], list[str]]] = {
    ("eo", "scene"): lambda: _samples("eo", folders=True),
    ("eo", "product"): _index_names,
    ("nid", "path"): lambda: _samples("nid", (".txt", ".jsonl")),
    ("nid", "dataset"): lambda: NID_DATASETS,
    ("nid", "mode"): lambda: ["audit", "inference"],
    ("dti", "target"): lambda: list(_targets()),
    ("dti", "library"): lambda: _samples("dti", (".smi", ".sdf")),
    ("dti", "model"): _dti_models,
    ("qa", "path"): lambda: _samples("longctx", (".txt",)),
    ("graph", "tasks"): lambda: _graph_names("tasks"),
    ("graph", "generator"): lambda: _graph_names("generator"),
    ("graph", "format"): lambda: _graph_names("format"),
    ("graph", "scheme"): lambda: _graph_names("scheme"),
}


def matches(candidates: list[str], typed: str) -> Completion:
    """The candidates that start with `typed` (case-insensitively), the exact-case ones first, at most 100."""
    low = typed.lower()
    hits = [c for c in candidates if c.startswith(typed)]
    hits += [c for c in candidates if c.lower().startswith(low) and c not in hits]
    return Completion(values=hits[:MAX_COMPLETIONS], total=len(hits), has_more=len(hits) > MAX_COMPLETIONS)


async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
    """Completions for a prompt argument or the output template's path (None: nothing to offer)."""
    import anyio.to_thread

    if isinstance(ref, ResourceTemplateReference):
        if ref.uri == OUTPUT_SCHEME + "{+path}" and argument.name == "path":
            return matches(await anyio.to_thread.run_sync(_output_files), argument.value)
        return None
    if not isinstance(ref, PromptReference):
        return None
    source = CANDIDATES.get((ref.name, argument.name))
    if source is None:
        return None
    candidates = await anyio.to_thread.run_sync(source)
    if ref.name == "graph" and argument.name == "tasks" and "," in argument.value:
        head, _, last = argument.value.rpartition(",")
        done = [t.strip() for t in head.split(",")]
        found = matches([c for c in candidates if c not in done], last.strip())
        return Completion(values=[f"{head},{v}" for v in found.values], total=found.total, has_more=found.has_more)
    return matches(candidates, argument.value)
