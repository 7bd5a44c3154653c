"""The local executor: how many tasks run at once follows what the operators declare."""

from curate.engine import local, plan
from curate.ops import Map, Resources
from curate.recipe import Step


def test_declared_resources_limit_parallel_tasks(monkeypatch):
    class Heavy(Map):
        name = "heavy"
        resources = Resources(cpus=4, memory_gb=1)

    monkeypatch.setattr(local, "available_cores", lambda: 8)
    stage = plan.Stage(0, None, (Step(index=1, name="heavy", op_class=Heavy, params=Heavy.Params()),))
    assert local.stage_parallelism(stage, workers=8) == 2
    assert local.stage_parallelism(plan.Stage(0, None, ()), workers=8) == 8


def test_io_stages_run_on_few_processes(monkeypatch):
    """One event loop keeps hundreds of requests in flight: one process per 4 cores, and on a
    small machine one (the main process: nothing spawned)."""
    io = plan.Stage(0, None, (), resource_class="io")
    for cores, expected in [(2, 1), (8, 2), (16, 4)]:
        monkeypatch.setattr(local, "available_cores", lambda: cores)
        assert local.stage_parallelism(io, workers=16) == expected
    assert local.stage_parallelism(io, workers=1) == 1
