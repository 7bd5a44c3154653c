"""The plan's resource policy: how many tasks of a stage run at once follows what the operators
declare, decided once for every executor."""

from curate.engine.tasks import plan
from curate.ops import Map, Resources
from curate.recipe import Step


def test_declared_resources_limit_parallel_tasks():
    class Heavy(Map):
        name = "heavy"
        resources = Resources(cpus=4, memory_gb=1)

    stage = plan.Stage(0, None, (Step(index=1, name="heavy", op_class=Heavy, params=Heavy.Params()),))
    assert plan.policy(stage, workers=8, cores=8) == plan.Policy(cpus=4, memory_gb=1, parallel=2)
    assert plan.policy(plan.Stage(0, None, ()), workers=8, cores=8).parallel == 8
    assert plan.policy(plan.Stage(0, None, ()), workers=3, cores=8).parallel == 3


def test_io_stages_run_on_few_processes():
    """One event loop keeps hundreds of requests in flight: one process per 4 cores, and on a
    small machine one (the main process: nothing spawned)."""
    io = plan.Stage(0, None, (), resource_class="io")
    for cores, expected in [(2, 1), (8, 2), (16, 4)]:
        assert plan.policy(io, workers=16, cores=cores).parallel == expected
    assert plan.policy(io, workers=1, cores=16).parallel == 1


def test_the_plan_carries_each_stages_policy(tmp_path):
    class Heavy(Map):
        name = "heavy"
        resources = Resources(cpus=2)

    steps = [Step(index=1, name="heavy", op_class=Heavy, params=Heavy.Params())]
    made = plan.make(steps, [], None, workers=4, cores=4)
    assert made.stages[0].policy.parallel == 2
    policy = {"cpus": 2, "memory_gb": None, "gpus": 0.0, "parallel": 2, "threads": False}
    assert made.describe()["stages"][0]["policy"] == policy


def test_a_stage_with_no_operator_runs_on_threads():
    """Reading and writing alone is Arrow's C++, with the GIL released: threads of the run process,
    as many as processes would have been, and no worker process started ahead."""
    class Light(Map):
        name = "light"

    bare = plan.policy(plan.Stage(0, None, ()), workers=4, cores=4)
    assert bare.threads and bare.parallel == 4
    light = plan.Stage(0, None, (Step(index=1, name="light", op_class=Light, params=Light.Params()),))
    assert not plan.policy(light, workers=4, cores=4).threads
    assert plan.first_stage_workers([], None, workers=4, cores=4) == 0
    assert plan.first_stage_workers(list(light.steps), None, workers=4, cores=4) == 4


def test_the_workers_started_ahead_are_those_the_first_stage_keeps_busy():
    """The CLI starts the first stage's workers before the input is checked: as many as the stage
    runs at once (no more than a listed input has files), none where it runs on model workers or
    in the run process."""
    class Heavy(Map):
        name = "heavy"
        resources = Resources(cpus=2)

    class Embed(Map):
        name = "embed"
        resources = Resources(gpus=1, pool="model")

    def step(op):
        return [Step(index=1, name=op.name, op_class=op, params=op.Params())]

    class Light(Map):
        name = "light"

    assert plan.first_stage_workers(step(Light), None, workers=4, cores=4) == 4
    assert plan.first_stage_workers(step(Heavy), None, workers=4, cores=4) == 2
    assert plan.first_stage_workers(step(Heavy), None, workers=4, cores=2) == 0  # one at a time: in the run process
    assert plan.first_stage_workers(step(Light), 100, workers=4, cores=4) == 0  # --limit: one task
    assert plan.first_stage_workers(step(Embed), None, workers=4, cores=4) == 0  # model workers
    # a listed input of fewer files: as many as there are files (one task each at least)
    assert plan.first_stage_workers(step(Light), None, workers=4, cores=4, files=3) == 3
    assert plan.first_stage_workers(step(Light), None, workers=4, cores=4, files=1) == 0


def test_the_plan_json_is_json_dumps_bytes_encoded_a_piece_at_a_time():
    """_work/plan.json, written at each stage's start, has json.dumps(indent=1)'s bytes, but its
    encoding holds far less at its peak than json.dumps, which joins the pieces of every task's
    entry at once (2,000 input files: a task each)."""
    import json
    import tracemalloc

    from curate.io.sources import Source

    sources = [Source(f"/data/crawl/CC-MAIN-{i:05d}.warc.gz", "warc", f"CC-MAIN-{i:05d}.warc.gz") for i in range(2000)]
    made = plan.make([], sources, None, workers=2, cores=2)

    def peak(encode) -> tuple[bytes, int]:
        tracemalloc.start()
        try:
            return encode(), tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    written, written_peak = peak(made.json_bytes)
    dumped, dumped_peak = peak(lambda: json.dumps(made.describe(), indent=1).encode())
    assert written == dumped and len(made.describe()["stages"][0]["tasks"]) == 2000
    assert written_peak < dumped_peak / 2, (written_peak, dumped_peak)
