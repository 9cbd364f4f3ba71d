"""The workflows by name, and running one durably like the ReAct agent."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from agents.connection import ServerTarget, ToolBox
from agents.runner import ApprovalMode, RunResult, run_graph
from tools.errors import InvalidInput, unknown_name


@dataclass(frozen=True)
class Workflow:
    name: str
    module: str
    summary: str
    example: dict[str, Any]
    needs_model: bool

    def load(self) -> Any:
        return importlib.import_module(self.module)


def _wf(name: str, module: str, needs_model: bool) -> Workflow:
    mod = importlib.import_module(module)
    return Workflow(name, module, mod.SUMMARY, mod.EXAMPLE, needs_model)


WORKFLOWS: dict[str, Workflow] = {
    "eo": _wf("eo", "agents.workflows.eo", False),
    "graph": _wf("graph", "agents.workflows.graph", True),
    "dti": _wf("dti", "agents.workflows.dti", False),
    "nid": _wf("nid", "agents.workflows.nid", False),
    "qa": _wf("qa", "agents.workflows.longctx", True),
}


async def run_workflow(name: str, inputs: dict[str, Any] | None, *, target: ServerTarget | None = None,
                       session: Any = None, thread_id: str | None = None, resume: bool = False,
                       approval: ApprovalMode = "ask",
                       console: Any = None, model: Any = None) -> RunResult:
    """Run workflow `name` on `inputs` (or continue thread `thread_id` with `resume`)."""
    from tools.settings import get_settings

    if name not in WORKFLOWS:
        raise unknown_name("workflow", name, WORKFLOWS)
    wf = WORKFLOWS[name]
    mod = wf.load()
    s = get_settings().llm
    wants_model = wf.needs_model or bool((inputs or {}).get("question"))
    if model is None and (s.configured or (s.embedded and wants_model)):  # else the embedded model, when needed
        from agents.model import chat_model

        model = chat_model()
    if model is None and wf.needs_model:
        from agents.model import NO_ENDPOINT

        raise NO_ENDPOINT
    if not resume:
        missing = [k for k in mod.EXAMPLE if k not in (inputs or {}) and k in getattr(mod, "REQUIRED", ())]
        if missing:
            raise InvalidInput(f"The {name} workflow needs {', '.join(missing)}.",
                               hint=f"Example --input: {mod.EXAMPLE}")

    async def build(box: ToolBox, saver: Any) -> Any:
        return mod.build(box, saver, model)

    return await run_graph(build, inputs, kind=name, question=(inputs or {}).get("question"),
                           target=target or ServerTarget(), session=session, thread_id=thread_id, resume=resume,
                           approval=approval,
                           console=console, answer_of=lambda v: v.get("answer"),
                           model_name=getattr(model, "model_name", None), meta={"inputs": inputs})
