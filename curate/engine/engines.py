"""Which executors run a run's tasks: the local engine (processes on this machine) or Ray.

An engine hands the runner a CPU executor for the run and a model pool per model stage; the
runner does the rest, the same way for both.
"""

from __future__ import annotations

from pathlib import Path

from curate.engine.local import LocalExecutor, available_cores
from curate.engine.pool import ModelPool
from curate.engine.worker import Progress
from curate.errors import CurateError

ENGINES = ("local", "ray")


class LocalEngine:
    def __init__(self, progress: Progress, work: Path):
        self.progress = progress
        self.work = work
        self.cores = available_cores()

    def cpu_executor(self, workers: int) -> LocalExecutor:
        return LocalExecutor(workers, self.progress, self.work)

    def model_pool(self, cpu_workers: int) -> ModelPool:
        return ModelPool(self.progress, self.work, cpu_workers)

    def close(self, discard_work: bool = False) -> None:
        pass


def make(engine: str, address: str | None, progress: Progress, work: Path, status=lambda message: None,
         env: list[str] = (), store: str | None = None, resume: bool = False, inputs: list[str] = ()):
    """The engine named `engine` ("local" or "ray"); Ray is imported only when asked for. `env`:
    the environment variables the recipe's operators read in their workers (Operator.env_vars);
    `store`, `resume`, `inputs`: the Ray engine's work store, whether the run resumes, its
    input files (ray_executor.RayEngine)."""
    if engine == "ray":
        try:
            from curate.engine.ray_executor import RayEngine
        except ModuleNotFoundError as e:
            if e.name != "ray":
                raise
            raise CurateError("--engine ray needs Ray: pip install 'curate[ray]'") from None

        return RayEngine(address, progress, work, status, env, store, resume, inputs)
    return LocalEngine(progress, work)
