"""Batch work on Dask: a job is split into partitions, each partition runs as one task on a Dask cluster.

The cluster is an embedded `distributed.LocalCluster` by default (worker processes on 127.0.0.1, one per
usable CPU, one thread each, started lazily on the first job of a process and closed at exit). Set
`RESEARCH_MCP_DASK_SCHEDULER=tcp://host:8786` to run on an existing cluster instead: `dask scheduler` +
`dask worker` by hand, dask-gateway (`gateway.new_cluster().scheduler_address`), Kubernetes (the
dask-kubernetes operator or the dask Helm chart expose a scheduler service on port 8786) or SLURM/PBS
through dask-jobqueue (`SLURMCluster(...).scheduler_address`). Workers need research-mcp installed and
must see the same input paths when a partition reads a file itself.

`map_partitions(fn, partitions)` submits `fn(partition)` for each partition with at most a few
partitions per worker thread in flight (so a stream of partitions is never held whole in memory) and
yields the results in partition order. Progress comes from the futures as they finish; once the caller's
`Progress` is cancelled the futures still pending are cancelled. A worker that dies mid-task is replaced
by its nanny and the scheduler reruns its tasks elsewhere; each partition's result is taken once, so the
output is complete and nothing is counted twice. A job of fewer than `min_partitions` partitions, or any
job with `RESEARCH_MCP_DASK_MODE=inline`, runs the same `fn` on the same partitions in this process, so
the two paths give identical results.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from tools.errors import NotConfigured, ResearchError
from tools.progress import Progress

logger = logging.getLogger("research_mcp.execution")

P = TypeVar("P")
R = TypeVar("R")

# Environment variables never sent to workers: credentials stay in the process that was given them.
_PRIVATE = ("TOKEN", "KEY", "SECRET", "PASSWORD", "RESEARCH_MCP_LLM", "RESEARCH_MCP_DASK")


class DaskSettings(BaseSettings):
    """Where batch work runs (environment prefix `RESEARCH_MCP_DASK_`)."""

    model_config = SettingsConfigDict(env_prefix="RESEARCH_MCP_DASK_", extra="ignore")

    scheduler: str | None = Field(
        None, description="Address of an existing Dask scheduler (tcp://host:8786); unset = embedded LocalCluster."
    )
    mode: Literal["auto", "inline"] = Field(
        "auto", description="'auto': Dask for jobs of min_partitions or more; 'inline': always in this process."
    )
    workers: int | None = Field(None, ge=1, description="Worker processes of the embedded cluster (default: CPUs).")
    threads_per_worker: int = Field(1, ge=1, description="Threads per worker process of the embedded cluster.")
    memory_limit: str = Field("auto", description="Memory limit per embedded worker ('auto' splits the machine).")
    min_partitions: int = Field(2, ge=1, description="Jobs with fewer partitions run in this process.")
    in_flight: int = Field(2, ge=1, description="Partitions submitted ahead per worker thread.")


def dask_settings() -> DaskSettings:
    """The current settings (re-read from the environment on every call: cheap, and tests change it)."""
    return DaskSettings()


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


# ------------------------------------------------------------------ the process-wide client


@dataclass
class _State:
    client: Any = None
    cluster: Any = None
    address: str | None = None  # the scheduler the client is attached to, or "local"


_state = _State()
_lock = threading.Lock()


def get_client() -> Any:
    """The process's `distributed.Client`: attached to RESEARCH_MCP_DASK_SCHEDULER, or to an embedded
    LocalCluster started on first use."""
    s = dask_settings()
    want = s.scheduler or "local"
    with _lock:
        if _state.client is not None and _state.address == want and _state.client.status == "running":
            return _state.client
        _close_locked()
        from distributed import Client, LocalCluster

        if s.scheduler:
            try:
                client = Client(s.scheduler, timeout="20s", set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise NotConfigured(
                    f"No Dask scheduler answers at {s.scheduler} ({type(exc).__name__}).",
                    hint="Start one (`dask scheduler`, dask-gateway, the dask Helm chart, dask-jobqueue) or unset "
                    "RESEARCH_MCP_DASK_SCHEDULER to use an embedded local cluster.",
                ) from exc
            _state.client, _state.address = client, want
        else:
            logging.getLogger("distributed").setLevel(logging.WARNING)
            cluster = LocalCluster(
                n_workers=s.workers or usable_cpus(),
                threads_per_worker=s.threads_per_worker,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                memory_limit=s.memory_limit,
            )
            _state.cluster, _state.client, _state.address = cluster, Client(cluster, set_as_default=False), want
            logger.info("started a local Dask cluster at %s", cluster.scheduler_address)
    return _state.client


def start_local_cluster(workers: int | None = None) -> str:
    """Start the embedded cluster now (not at the first job) and return its scheduler address, so that
    other processes (several HTTP server processes) can attach to it through RESEARCH_MCP_DASK_SCHEDULER."""
    if workers is not None:
        os.environ["RESEARCH_MCP_DASK_WORKERS"] = str(workers)
    os.environ.pop("RESEARCH_MCP_DASK_SCHEDULER", None)
    get_client()
    return _state.cluster.scheduler_address


def _close_locked() -> None:
    client, cluster = _state.client, _state.cluster
    _state.client = _state.cluster = _state.address = None
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close()
            except Exception:  # closing at exit: the loop may already be gone
                logger.debug("closing %r failed", thing, exc_info=True)


def close() -> None:
    """Close the client and the embedded cluster, if any (at exit, or before attaching elsewhere)."""
    with _lock:
        _close_locked()


atexit.register(close)


def worker_pids() -> dict[str, int]:
    """Worker address -> process id, for the cluster this process uses."""
    return get_client().run(os.getpid)


def cluster_workers() -> int:
    """Worker threads of the cluster this process uses."""
    return sum(get_client().nthreads().values())


# ------------------------------------------------------------------ running partitions


def _public_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("RESEARCH_MCP_") and not any(p in k for p in _PRIVATE)}


@dataclass(frozen=True)
class _Raised:
    """A `ResearchError` raised in a worker, carried back as data (its subclasses do not all unpickle)."""

    cls: type
    text: str

    def rebuild(self) -> ResearchError:
        err = self.cls.__new__(self.cls)
        ResearchError.__init__(err, self.text)
        return err


def _run_task(fn: Callable[[Any], Any], env: dict[str, str], partition: Any) -> Any:
    """`fn(partition)` in a worker, with the caller's RESEARCH_MCP_ settings."""
    current = _public_env()
    if current != env:
        for k in current.keys() - env.keys():
            del os.environ[k]
        os.environ.update(env)
        from tools.settings import reload_settings

        reload_settings()
    try:
        return fn(partition)
    except ResearchError as exc:
        return _Raised(type(exc), str(exc))


def _unwrap(value: Any) -> Any:
    if isinstance(value, _Raised):
        raise value.rebuild()
    return value


def will_distribute(n_partitions: int | None) -> bool:
    """Whether a job of `n_partitions` (None: unknown, at least min_partitions) runs on Dask."""
    s = dask_settings()
    return s.mode != "inline" and (n_partitions is None or n_partitions >= s.min_partitions)


def map_partitions(
    fn: Callable[[P], R],
    partitions: Iterable[P],
    *,
    progress: Progress | None = None,
    name: str = "partition",
) -> Iterator[R]:
    """`fn(p)` for every partition `p`, yielded in partition order.

    `fn` must be a module-level function (workers import it by name) and pure: a rerun after a lost
    worker must give the same result. Partitions are pulled from `partitions` only as workers free up.
    A `ResearchError` raised by `fn` is raised here with its message. Closing the iterator early, or
    cancelling `progress`, cancels the partitions not yet finished.
    """
    s = dask_settings()
    it = iter(partitions)
    head = list(itertools.islice(it, s.min_partitions))
    if s.mode == "inline" or len(head) < s.min_partitions:
        for p in itertools.chain(head, it):
            if progress is not None:
                progress.check()
            yield fn(p)
        return
    yield from _distributed(fn, itertools.chain(head, it), progress, name)


def _distributed(fn: Callable[[P], R], parts: Iterator[P], progress: Progress | None, name: str) -> Iterator[R]:
    from distributed import wait

    client = get_client()
    env = _public_env()
    window = max(1, dask_settings().in_flight * max(1, sum(client.nthreads().values())))
    run = f"{name}-{uuid.uuid4().hex[:10]}"
    pending: dict[Any, int] = {}  # future -> partition index
    ready: dict[int, Any] = {}
    next_out = 0
    submitted = 0
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < window and len(ready) < 4 * window:
                try:
                    part = next(parts)
                except StopIteration:
                    exhausted = True
                    break
                fut = client.submit(_run_task, fn, env, part, key=f"{run}-{submitted}", pure=False)
                pending[fut] = submitted
                submitted += 1
            while next_out in ready:
                yield _unwrap(ready.pop(next_out))
                next_out += 1
            if exhausted and not pending and not ready:
                return
            if progress is not None:
                progress.check()
            if not pending:
                continue
            try:
                with client.as_current():
                    done = wait(list(pending), timeout=0.25, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                continue
            for fut in done:
                index = pending.pop(fut)
                ready[index] = fut.result()
                fut.release()
    finally:
        if pending:
            client.cancel(list(pending), reason="the caller stopped the job")
