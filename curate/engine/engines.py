"""The engines a run may use: the local engine (processes on this machine), Ray or Slurm."""

from __future__ import annotations

from curate.engine.context import Progress
from curate.engine.executor import Engine
from curate.engine.layout import RunLayout
from curate.engine.local import LocalEngine
from curate.errors import CurateError

ENGINES = ("local", "ray", "slurm")


def make(engine: str, address: str | None, progress: Progress, layout: RunLayout, status=lambda message: None,
         env: list[str] = (), store: str | None = None, resume: bool = False, inputs: list[str] = (),
         fallback_store: str | None = None, slurm=None) -> Engine:
    """The engine named `engine` ("local" or "ray"); Ray is imported only when asked for. `env`:
    the environment variables the recipe's operators read in their workers (Operator.env_vars);
    `store`, `resume`: the work store (--work-store) and whether the run resumes; `inputs`,
    `fallback_store`: the Ray engine's input files and work store where none is given
    (ray_executor.RayEngine); `slurm`: the recipe's `slurm:` settings (recipe.SlurmSpec), for
    --engine slurm (slurm.SlurmEngine)."""
    if engine == "slurm":
        from curate.engine.slurm import SlurmEngine

        return SlurmEngine(progress, layout, status, slurm, store, resume)
    if engine == "ray":
        try:
            from curate.engine.ray_executor import RayEngine
        except ModuleNotFoundError as e:
            if e.name != "ray":
                raise
            raise CurateError("--engine ray needs Ray: pip install 'curate[ray]'") from None

        return RayEngine(address, progress, layout, status, env, store, resume, inputs, fallback_store)
    return LocalEngine(progress, layout, store, resume)
