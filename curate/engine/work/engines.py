"""The engines a run may use, by name: the local engine (processes on this machine), Ray or Slurm.

An engine only runs tasks (executor.py); it is made from one EngineConfig, so the runner never
branches on which engine it has: what it must know of one (whether its workers see this
machine's disk) is in its registration. A new engine joins by a line in ENGINES, or by
`register` from its own package, without touching the runner or the CLI, which lists ENGINES.
Each is imported only when a run asks for it: Ray and Slurm's modules stay out of a local run,
and this module imports nothing heavy, so `curate --help` can list them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from curate.errors import CurateError

if TYPE_CHECKING:
    from curate.engine.rundir.layout import RunLayout
    from curate.engine.tasks.context import Progress
    from curate.engine.work.executor import Engine


@dataclass(frozen=True)
class Registered:
    """What the registry knows of an engine before it is imported."""

    target: str  # "module:Class", the Engine subclass; imported only when a run asks for it
    about: str  # what runs the tasks, for `curate run --help`
    # Its workers may not see this machine's disk: a local output's work files then travel
    # through a work store (--work-store), which --resume remembers
    remote_workers: bool = False
    takes_address: bool = False  # it connects to a cluster at --address
    needs: tuple[str, str] | None = None  # (the package it needs beyond curate's core, how to install it)


ENGINES: dict[str, Registered] = {
    "local": Registered("curate.engine.local.engine:LocalEngine", "processes on this machine"),
    "ray": Registered(
        "curate.engine.ray.engine:RayEngine",
        "a Ray cluster at --address, or a Ray instance for the run",
        remote_workers=True,
        takes_address=True,
        needs=("ray", "pip install 'curate[ray]'"),
    ),
    "slurm": Registered(
        "curate.engine.slurm.engine:SlurmEngine",
        "job arrays; the recipe's slurm: section, or --set slurm.partition=NAME",
        remote_workers=True,
    ),
}


def register(name: str, engine: Registered) -> None:
    """Add an engine (a package's own) under `name`; a built-in one cannot be replaced."""
    if name in ENGINES and ENGINES[name] != engine:
        raise CurateError(f"an engine named {name!r} is registered already ({ENGINES[name].target})")
    ENGINES[name] = engine


def get(name: str) -> Registered:
    """The registration of the engine called `name`; an unknown name is a CurateError listing them."""
    if name not in ENGINES:
        raise CurateError(f"engine {name!r}: choose one of {', '.join(ENGINES)}")
    return ENGINES[name]


def check(name: str, address: str | None) -> None:
    """`--engine` and `--address` as `curate run` and curate.run take them; a CurateError says what is wrong."""
    if not get(name).takes_address and address:
        takers = [n for n, engine in ENGINES.items() if engine.takes_address]
        raise CurateError(f"--address is for --engine {' or '.join(takers)}")


def described() -> str:
    """Each engine's name, what runs the tasks and what it needs installed, for help texts."""
    return "; ".join(
        f"{name} ({engine.about}{f'; needs {engine.needs[1]}' if engine.needs else ''})"
        for name, engine in ENGINES.items()
    )


@dataclass(frozen=True)
class EngineConfig:
    """What any engine is made from (Engine.from_config), whichever it is."""

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
    registered = get(name)
    module, _, cls = registered.target.partition(":")
    try:
        engine_class = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as e:
        package, install = registered.needs or (None, None)
        if package is None or e.name != package:
            raise
        raise CurateError(f"--engine {name} needs {package.capitalize()}: {install}") from None
    return engine_class.from_config(config)
