"""What the nodes of a Ray cluster see and get: the environment Ray workers start with, a look
from each node before a run (the work directory, the work store, the input files), and the
removal of blind nodes' mirrors after it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Sequence

import ray

from curate.engine.work import work_store, worker
from curate.engine.work.work_store import WorkStore
from curate.errors import CurateError

PASSED_ENV = ("CURATE_",)  # driver environment the workers get (failpoints in tests, settings)
STORE_ENV = ("FSSPEC_", "AWS_")  # and where the run uses a store, its settings and credentials


def on_node(node: str):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=False)


def worker_env(names: Sequence[str] = (), store: bool = False) -> dict[str, str]:
    """The environment Ray workers get beyond the node's own: this checkout on the import path
    (where curate is not installed on the nodes, the driver's source tree, if the nodes see it),
    CURATE_* settings, the variables the recipe's operators read (`names`, e.g. an API key's:
    Ray's runtime environment carries them, so on a cluster shared with others set them on the
    nodes instead), and where the run uses a store (a work store, its input or output at a URI),
    its settings (FSSPEC_*, AWS_*)."""
    source = str(Path(worker.__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    passed = PASSED_ENV + (STORE_ENV if store else ())
    return {
        "PYTHONPATH": path,
        **{k: v for k, v in os.environ.items() if k.startswith(passed)},
        **{k: os.environ[k] for k in names if k in os.environ},
    }


def check_nodes(work: Path, nodes: list[dict], store: WorkStore | None, inputs: list[str]) -> frozenset[str]:
    """Look from a task pinned to each node: whether it sees the run's work directory at the same
    path (a probe file written here), the input files, and the work store where one is given.
    Returns the nodes that do not see the work directory (they use the store); a node that can
    work neither way is a user error naming it."""
    probe = work / f"probe-{uuid.uuid4().hex}"
    probe.write_bytes(b"")
    try:
        if store is not None:
            store.put(probe)
        looks = ray.get(
            [_look.options(scheduling_strategy=on_node(n["NodeID"])).remote(str(probe), inputs, store) for n in nodes]
        )
    finally:
        probe.unlink()
        if store is not None:
            store.fs.rm(store.key(probe))
    blind = [(n, look) for n, look in zip(nodes, looks) if not look["sees_work"]]
    if blind and store is None:
        raise CurateError(
            f"the run directory {work.parent} is not visible from Ray node(s) "
            f"{', '.join(n['NodeManagerAddress'] for n, _ in blind)}: with --engine ray the output must "
            f"be on storage every node sees at the same path (a shared filesystem such as NFS), as "
            f"workers write their shards there, or the nodes share the work files through an object "
            f"store: --work-store s3://BUCKET/PREFIX"
        )
    for n, look in zip(nodes, looks):
        if look["store_error"]:
            assert store is not None  # only a store given has an error
            raise CurateError(
                f"Ray node {n['NodeManagerAddress']} cannot read the work store {store.uri}: "
                f"{look['store_error']}. Every node needs access to it (credentials, endpoint)"
            )
        if look["missing_inputs"]:
            first = look["missing_inputs"][0]
            raise CurateError(
                f"input file {first} is not visible from Ray node {n['NodeManagerAddress']} "
                f"({len(look['missing_inputs'])} of {len(inputs)} input files are not): every node "
                f"reads input files at the same path (a shared or replicated read-only location)"
            )
    return frozenset(n["NodeID"] for n, _ in blind)


@ray.remote(num_cpus=0)
def _look(probe: str, inputs: list[str], store: WorkStore | None) -> dict:
    sees = os.path.exists(probe)
    store_error = None
    if store is not None and not sees:
        try:
            if store.read_bytes(Path(probe)) is None:
                store_error = "a file the run put there is not found"
        except Exception as e:  # any failure of the filesystem: the message says which
            store_error = f"{type(e).__name__}: {e}"
    return {
        "sees_work": sees,
        "store_error": store_error,
        "missing_inputs": [p for p in inputs if not os.path.exists(p)],
    }


@ray.remote(num_cpus=0)
def _drop_mirror(work: Path, session: str) -> None:
    work_store.drop_mirror(work, session)


def drop_mirrors(work: Path, session: str) -> None:
    """Every live node's mirror of `work` of this engine session (blind nodes have one)."""
    ray.get(
        [
            _drop_mirror.options(scheduling_strategy=on_node(n["NodeID"])).remote(work, session)
            for n in ray.nodes()
            if n["Alive"]
        ]
    )
