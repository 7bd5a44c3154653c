"""The engines a run may use, by name: the local engine (processes on this machine), Ray or Slurm.

An engine only runs tasks (executor.py); it is made from one EngineConfig, so the runner never
branches on which engine it has, and a new engine joins by adding a line to ENGINES (its class
takes the config) without touching the runner. Each is imported only when asked for: Ray and
Slurm's modules stay out of a local run and out of `curate --help`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from curate.engine.tasks.context import Progress
from curate.engine.work.executor import Engine
from curate.engine.rundir.layout import RunLayout
from curate.errors import CurateError

# name -> (module:class, what it does: shown by `curate run --help`)
ENGINES: dict[str, tuple[str, str]] = {
    "local": ("curate.engine.local.engine:LocalEngine", "processes on this machine"),
    "ray": ("curate.engine.ray.engine:RayEngine", "a Ray cluster (--address, or a Ray instance for the run)"),
    "slurm": ("curate.engine.slurm:SlurmEngine", "Slurm job arrays (the recipe's slurm: settings)"),
}
# The package an engine needs beyond curate's core, and the extra that installs it.
NEEDS = {"ray": ("ray", "pip install 'curate[ray]'")}


@dataclass(frozen=True)
class EngineConfig:
    """What any engine is made from."""

    progress: Progress  # where tasks report rows and bytes (the runner's Reporter.progress)
    layout: RunLayout  # the run directory
    status: Callable[[str], None] = lambda message: None  # a line for the user
    env: tuple[str, ...] = ()  # the environment variables the recipe's operators read in their workers
    store: str | None = None  # --work-store: the URI the tasks copy their work files to
    resume: bool = False  # whether the run resumes (the store then keeps what an earlier attempt put there)
    inputs: tuple[str, ...] = ()  # the input files (Ray: to tell which nodes see them)
    fallback_store: str | None = None  # the work store when none is given (an output at a URI)
    address: str | None = None  # Ray: the cluster's address
    slurm: Any = field(default=None)  # the recipe's slurm: settings (recipe.SlurmSpec)


def make(name: str, config: EngineConfig) -> Engine:
    """The engine called `name` (one of ENGINES), made from `config`."""
    if name not in ENGINES:
        raise CurateError(f"no engine {name!r}: choose one of {', '.join(ENGINES)}")
    module, _, cls = ENGINES[name][0].partition(":")
    try:
        engine_class = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as e:
        package, install = NEEDS.get(name, (None, None))
        if package is None or e.name != package:
            raise
        raise CurateError(f"--engine {name} needs {package.capitalize()}: {install}") from None
    return engine_class.from_config(config)
