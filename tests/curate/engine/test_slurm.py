"""--engine slurm on a real one-node Slurm cluster (slurmkit.py: munged, slurmctld and slurmd
started for the session, MaxArraySize 3): the local engine's bytes, each stage as job arrays
split past MaxArraySize, an array task cancelled mid-task resubmitted, the driver killed then
--resume submitting only the unfinished tasks, SIGTERM cancelling every job, and a task Slurm
keeps ending named with Slurm's state. Skipped, saying why, where the cluster cannot start (not
root, Slurm or munge not installed)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from curate.demo import generate
from curate.engine.slurm import scripts
from curate.errors import CurateError
from curate.manifest import read as read_manifest
from tests.curate.engine.faultkit import REPO, wait_for_failpoint
from tests.curate.engine.slurmkit import MAX_ARRAY_SIZE, slurm_cluster  # noqa: F401 (a fixture)
from tests.curate.io.storekit import local_digest
from tests.recipes.offline import local_reference

# One worker of the test command (--dist loadgroup) runs them all: one Slurm for the session.
pytestmark = pytest.mark.xdist_group("slurm")

RECIPES = REPO / "recipes"
FAST = ["--set", "slurm.poll_seconds=0.2"]


def digest(out: Path) -> dict[str, str]:
    files = sorted([*out.glob("data/*.parquet"), *out.glob("trace/*.parquet")])
    assert files
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


FILES = MAX_ARRAY_SIZE + 1  # one task more than an array may hold


def demo(tmp: Path, files: int, docs: int = 240) -> list[str]:
    generate(tmp / "demo", docs=docs, files=files, seed=0)
    return ["--input", f"{tmp}/demo/*.jsonl.gz"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[str]:
    """The input most tests run: FILES files of the demo corpus."""
    return demo(tmp_path_factory.mktemp("corpus"), files=FILES)


@pytest.fixture(scope="module")
def local(corpus, tmp_path_factory):
    """The local engine's bytes of a recipe over `corpus`, made once per recipe."""
    from typer.testing import CliRunner

    from curate.cli import app

    made: dict[str, dict] = {}

    def bytes_of(name: str) -> dict:
        if name not in made:
            out = tmp_path_factory.mktemp(f"local-{name}") / "out"
            res = CliRunner().invoke(app, ["run", str(RECIPES / f"{name}.yaml"), *corpus, "--output", str(out),
                                           "-w", "2"], catch_exceptions=False)
            assert res.exit_code == 0, res.output
            made[name] = digest(out)
        return made[name]

    return bytes_of


def submissions(out: Path, attempt: int = 1) -> dict[str, list[dict]]:
    """Each batch's sbatch submissions (submissions.jsonl), by batch directory name."""
    root = out / "_work" / "slurm" / f"attempt-{attempt}"
    return {d.name: [json.loads(line) for line in (d / "submissions.jsonl").read_text().splitlines()]
            for d in sorted(root.iterdir()) if (d / "submissions.jsonl").exists()}


def start(recipe: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """`curate run --engine slurm` as a child process in a group of its own."""
    return subprocess.Popen([sys.executable, "-m", "curate.cli", "run", str(recipe), "--engine", "slurm", *FAST,
                             *args], env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def killed_at(failpoint: str, cluster, recipe: Path, *args: str) -> None:
    """A Slurm run's driver SIGKILLed at `failpoint`, and what it submitted run out: a task already
    running finishes, the others find the driver gone."""
    proc = start(recipe, *args, env={"CURATE_FAILPOINT": failpoint})
    try:
        assert wait_for_failpoint(proc, timeout=120), proc.stderr.read().decode(errors="replace")[-3000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    wait_for(lambda: not cluster.squeue(), what="the killed driver's arrays to end")


def wait_for(condition, timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.1)


def stopped_array_task(out: Path) -> str:
    """The array task (JOB_INDEX) whose log says it stopped at its failpoint."""
    for log in (out / "_work" / "slurm").glob("attempt-*/*/logs/*.out"):
        if "failpoint task-batch" in log.read_text(errors="replace"):
            return log.stem
    return ""


def alone_in_the_queue(cluster, element: str) -> None:
    """Wait until the stopped array task `element` is the only job left: the others have run their
    shares and ended. One still running when `element` is cancelled would run its share in its
    place (an array task runs the shares no other holds), and the run would not lose it."""
    wait_for(lambda: [job for job, _, _ in cluster.squeue()] == [element], what="the other array tasks to end")


def test_array_spec_compresses_indices_into_ranges():
    assert scripts.array_spec([0, 1, 2, 3, 4], 2) == "0-4%2"
    assert scripts.array_spec([7, 0, 2, 3, 9], None) == "0,2-3,7,9"


def test_a_model_stage_asks_slurm_for_the_gpus_its_steps_declare():
    assert scripts.gres_for("gpu", 0) == "gpu" and scripts.gres_for("gpu:a100", 1) == "gpu:a100"  # Slurm's one
    assert scripts.gres_for("gpu", 2) == "gpu:2" and scripts.gres_for("gpu:a100", 1.5) == "gpu:a100:2"
    assert scripts.gres_for("gpu:4", 2) == "gpu:4"
    with pytest.raises(CurateError, match="asks for 1 GPUs a task; a model step of the stage declares 2"):
        scripts.gres_for("gpu:a100:1", 2)


def test_without_slurm_commands_the_error_says_what_is_missing(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    res = cli("run", RECIPES / "quickstart.yaml", *demo(tmp_path, 1, 20), "--output", tmp_path / "out",
              "--engine", "slurm")
    assert res.exit_code == 2, res.output
    assert "--engine slurm needs Slurm's client commands on PATH" in res.output and "sbatch" in res.output
    assert "Traceback" not in res.output


def test_a_bad_slurm_section_is_refused_with_its_place(cli, tmp_path):
    res = cli("run", RECIPES / "quickstart.yaml", *demo(tmp_path, 1, 20), "--output", tmp_path / "out",
              "--engine", "slurm", "--set", "slurm.mem=lots")
    assert res.exit_code == 2 and "slurm.mem" in res.output, res.output


@pytest.mark.slurm
def test_near_dedup_on_slurm_gives_the_local_engines_bytes_with_its_fit_pieces_as_arrays(slurm_cluster, cli,
                                                                                        tmp_path):
    args, recipe = demo(tmp_path, files=2), RECIPES / "near-dedup.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    res = cli("run", recipe, *args, "--output", tmp_path / "slurm", "-w", "2", "--engine", "slurm", *FAST,
              "--keep-work")
    assert res.exit_code == 0, res.output
    assert local_digest(tmp_path / "slurm") == reference
    batches = submissions(tmp_path / "slurm")
    pieces = [batch for batch in batches if "-map" in batch]
    assert pieces, sorted(batches)  # the fit's parallel pieces went out as arrays
    assert all(len(batches[b][0]["items"]) <= 2 for b in pieces)  # a share of the pieces per worker


@pytest.mark.slurm
def test_a_run_on_slurm_gives_the_local_engines_bytes_through_job_arrays(slurm_cluster, cli, tmp_path, corpus, local):
    name = "quickstart"
    recipe = RECIPES / f"{name}.yaml"
    res = cli("run", recipe, *corpus, "--output", tmp_path / "slurm", "-w", "2", "--engine", "slurm", *FAST,
              "--keep-work", "--set", "slurm.partition=debug", "--set", "slurm.time=\"10:00\"",
              "--set", "slurm.extra_sbatch=[--comment=curate-test]")
    assert res.exit_code == 0, res.output
    assert digest(tmp_path / "slurm") == local(name)
    batches = submissions(tmp_path / "slurm")
    stage0 = batches["001-stage0"]
    # 4 tasks, MaxArraySize 3: two arrays, the second after the first, %2 on each
    assert [s["array"] for s in stage0] == [f"0-{MAX_ARRAY_SIZE - 1}%2", "0%2"]
    assert [s["offset"] for s in stage0] == [0, MAX_ARRAY_SIZE]
    assert f"--dependency=afterany:{stage0[0]['job']}" in stage0[1]["command"]
    script = (tmp_path / "slurm" / "_work" / "slurm" / "attempt-1" / "001-stage0" / "launch.sh").read_text()
    for line in ("#SBATCH --partition=debug", "#SBATCH --time=10:00", "#SBATCH --comment=curate-test",
                 "#SBATCH --cpus-per-task=1", "-m curate.engine.slurm.task"):
        assert line in script
    # Slurm itself ran them as array tasks: JOB_INDEX, one a share; one whose share another array
    # task ran (its own done) completed at once, or was cancelled while pending once all were in
    ran = {job: state for job, state, _ in slurm_cluster.squeue("-t", "all", "-j", stage0[0]["job"])}
    # (array tasks that never started show as the array's pending record, JOB)
    assert set(ran) <= {f"{stage0[0]['job']}_{i}" for i in range(MAX_ARRAY_SIZE)} | {stage0[0]["job"]}
    assert set(ran.values()) <= {"COMPLETED", "CANCELLED"} and ran[f"{stage0[0]['job']}_0"] == "COMPLETED"
    # The manifest records the job ids and, per task, the array task and node that ran it
    record = read_manifest((tmp_path / "slurm" / "manifest.json").read_bytes(), "manifest.json").slurm
    assert record is not None and record.driver_job is None and record.allocation is None
    assert [(j.batch, j.job, j.array) for j in record.jobs if j.batch == "stage0"] == \
        [("stage0", s["job"], s["array"]) for s in stage0]
    tasks = {t.task: t for t in record.tasks if t.batch == "stage0"}
    assert sorted(tasks) == [f"part-{i:05d}" for i in range(FILES)]
    assert {t.job for t in tasks.values()} <= {f"{stage0[0]['job']}_{i}" for i in range(MAX_ARRAY_SIZE)} | \
        {f"{stage0[1]['job']}_0"}
    assert {t.node for t in tasks.values()} == {slurm_cluster.node} and {t.runs for t in tasks.values()} == {1}


@given(tasks=st.integers(0, 500), parallel=st.integers(1, 64))
@example(tasks=4, parallel=2)  # few tasks: one a share
@example(tasks=12, parallel=1)  # 4 shares of 3
@example(tasks=13, parallel=1)  # the last share shorter
def test_a_stage_s_tasks_go_out_in_contiguous_shares_of_about_four_waves(tasks, parallel):
    shares = scripts.task_shares(tasks, parallel)
    assert [i for share in shares for i in share] == list(range(tasks))  # each task once, in order
    assert len(shares) <= parallel * scripts.WAVES  # at most about four waves of array tasks
    assert len({len(share) for share in shares[:-1]}) <= 1 and all(shares)  # equal, the last maybe shorter
    assert tasks > parallel * scripts.WAVES or all(len(share) == 1 for share in shares)


@pytest.mark.slurm
def test_array_tasks_running_a_share_of_the_tasks_each_give_the_local_engines_bytes(slurm_cluster, cli, tmp_path):
    """12 input files at -w 1: 4 array tasks (about four waves of one), 3 tasks each, in order; the
    manifest names each task with the array task that gave its result."""
    args, recipe = demo(tmp_path, files=12, docs=120), RECIPES / "quickstart.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    res = cli("run", recipe, *args, "--output", tmp_path / "slurm", "-w", "1", "--engine", "slurm", *FAST,
              "--keep-work")
    assert res.exit_code == 0, res.output
    assert "12 tasks as a job array of 4, each running a share of them" in res.output
    assert local_digest(tmp_path / "slurm") == reference
    stage0 = submissions(tmp_path / "slurm")["001-stage0"]
    assert [s["array"] for s in stage0] == ["0-2%1", "0%1"] and [s["items"] for s in stage0] == [[0, 1, 2], [3]]
    record = read_manifest((tmp_path / "slurm" / "manifest.json").read_bytes(), "manifest.json").slurm
    tasks = [(t.task, t.item) for t in record.tasks if t.batch == "stage0"]
    assert tasks == [(f"part-{i:05d}", i // 3) for i in range(12)]
    # One at a time: the first array task, its share done, ran the others (highest first) while
    # their own array tasks waited, and those were cancelled once every share was in
    assert {t.job for t in record.tasks if t.batch == "stage0"} == {f"{stage0[0]['job']}_0"}
    ran = {job: state for job, state, _ in slurm_cluster.squeue("-t", "all", "-j", stage0[0]["job"])}
    assert ran == {f"{stage0[0]['job']}_0": "COMPLETED", stage0[0]["job"]: "CANCELLED"}  # 1-2: never started
    res = cli("run", recipe, *args, "--output", tmp_path / "dry", "-w", "1", "--engine", "slurm", "--dry-run")
    assert "stage 0: 12 tasks as 2 job arrays (a share of them each: 4 array tasks)" in res.output, res.output


def test_a_share_s_claim_is_held_while_its_array_task_runs_it(tmp_path):
    """What keeps two array tasks from running one share, and tells the driver that a share whose
    own array task ended early is running elsewhere."""
    from curate.engine.slurm.batch import Batch
    from curate.engine.slurm.task import _claim

    for sub in ("claims", "results"):
        (tmp_path / sub).mkdir()
    batch = Batch("stage0", tmp_path, 2, 1, [], steal=True)
    claim = _claim(tmp_path, 1)
    assert claim is not None and batch.claimed(1) and not batch.claimed(0)
    assert _claim(tmp_path, 1) is None  # held: another array task does not take it
    claim.close()  # the array task ended (or died): the kernel lets go of its lock
    assert not batch.claimed(1)
    (tmp_path / "results" / "1.pkl").write_bytes(b"")
    assert _claim(tmp_path, 1) is None  # its result is in: nothing left to run


def slow_tasks(tmp: Path) -> list[str]:
    """An input whose tasks have many batches left after their first: an array task stopped at its
    first (a failpoint) and then cancelled is still mid-task when SIGTERM reaches it (Slurm sends
    SIGCONT first, and a task with little left would finish in between)."""
    return [*demo(tmp, files=2, docs=1200), "--set", "input.batch_rows=40"]


@pytest.mark.slurm
def test_an_array_task_cancelled_mid_task_is_resubmitted_and_the_bytes_are_the_same(slurm_cluster, cli, tmp_path):
    args, recipe = slow_tasks(tmp_path), RECIPES / "quickstart.yaml"
    res = cli("run", recipe, *args, "--output", tmp_path / "local", "-w", "2")
    assert res.exit_code == 0, res.output
    out = tmp_path / "slurm"
    # One array task stops itself mid-task (after a batch through the steps, before writing it)
    proc = start(recipe, *args, "--output", str(out), "-w", "2", "--keep-work",
                 env={"CURATE_FAILPOINT": "task-batch", "CURATE_FAILPOINT_ONCE": str(tmp_path / "once")})
    try:
        wait_for(lambda: stopped_array_task(out), what="an array task to stop at its failpoint")
        element = stopped_array_task(out)
        alone_in_the_queue(slurm_cluster, element)
        slurm_cluster.scancel(element)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
    assert f"array task {element} ended as CANCELLED without a result; submitting it again" in err.decode()
    assert digest(out) == digest(tmp_path / "local")
    stage0 = submissions(out)["001-stage0"]
    # the stage's array, then the cancelled task again, alone
    assert [s["attempt"] for s in stage0] == [1, 2] and len(stage0[1]["items"]) == 1


@pytest.mark.slurm
def test_a_killed_driver_resumes_submitting_only_the_unfinished_tasks(slurm_cluster, cli, tmp_path, corpus, local):
    args, recipe = corpus, RECIPES / "quickstart.yaml"
    out = tmp_path / "slurm"
    # One array task at a time, which runs every share in turn (its own, then the highest first:
    # the others wait). It stops itself mid-way through its third share (30 batches a share); the
    # driver is killed, that array task cancelled, and the others, started, find the driver gone
    small = ["--set", "input.batch_rows=2"]
    proc = start(recipe, *args, *small, "--output", str(out), "-w", "1", "--keep-work",
                 env={"CURATE_FAILPOINT": "task-batch@65"})
    try:
        wait_for(lambda: stopped_array_task(out), timeout=120, what="the array task to stop at its failpoint")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    slurm_cluster.scancel(stopped_array_task(out))
    wait_for(lambda: not slurm_cluster.squeue(), what="the killed driver's arrays to end")
    stage0 = out / "_work" / "stage-0" / "done"
    done = len(list(stage0.glob("*.json")))
    assert done == 2
    res = cli("run", recipe, *args, *small, "--output", out, "-w", "2", "--engine", "slurm", *FAST, "--resume",
              "--keep-work")
    assert res.exit_code == 0, res.output
    resubmitted = submissions(out, attempt=2)["001-stage0"]
    assert sum(len(s["items"]) for s in resubmitted) == FILES - done
    assert digest(out) == local("quickstart")
    gone = [log for log in (out / "_work" / "slurm" / "attempt-1").glob("*/logs/*.out")
            if "not running item" in log.read_text()]
    assert gone  # the array tasks the first driver left started no work once it was gone
    record = read_manifest((out / "manifest.json").read_bytes(), "manifest.json").slurm
    by_attempt = {n: sorted(t.task for t in record.tasks if t.batch == "stage0" and t.run_attempt == n) for n in (1, 2)}
    assert len(by_attempt[1]) == done and len(by_attempt[2]) == FILES - done
    assert sorted(by_attempt[1] + by_attempt[2]) == [f"part-{i:05d}" for i in range(FILES)]


@pytest.mark.slurm
def test_an_error_raised_in_an_array_task_stops_the_run_with_that_error(slurm_cluster, cli, tmp_path):
    for f in range(2):
        rows = [json.dumps({"id": f"{f}-{i}", "text": f"hello world number {i} is here"}) for i in range(50)]
        (tmp_path / f"p{f}.jsonl").write_text("\n".join(rows + (["{not json"] if f else [])) + "\n")
    res = cli("run", RECIPES / "quickstart.yaml", "--input", f"{tmp_path}/p*.jsonl", "--output", tmp_path / "out",
              "--set", "input.on_bad_row=fail", "-w", "2", "--engine", "slurm", *FAST)
    assert res.exit_code == 2, res.output
    assert "p1.jsonl, line 51: malformed JSON" in res.output and "Traceback" not in res.output
    wait_for(lambda: not slurm_cluster.squeue(), timeout=10, what="no job pending or running")


@pytest.mark.slurm
def test_sigterm_to_the_driver_cancels_every_job_it_submitted(slurm_cluster, tmp_path):
    args = demo(tmp_path, files=4)
    proc = start(RECIPES / "quickstart.yaml", *args, "--output", str(tmp_path / "out"), "-w", "1")
    try:
        wait_for(lambda: any(state == "RUNNING" for _, state, _ in slurm_cluster.squeue()), what="a running task")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, err.decode(errors="replace")[-3000:]
    wait_for(lambda: not slurm_cluster.squeue(), timeout=10, what="no job pending or running")
    states = {state for _, state, _ in slurm_cluster.squeue("-t", "all")}
    assert "CANCELLED" in states


@pytest.mark.slurm
def test_a_task_slurm_ends_more_often_than_retries_is_named_with_slurms_state(slurm_cluster, tmp_path):
    args = slow_tasks(tmp_path)
    out = tmp_path / "out"
    proc = start(RECIPES / "quickstart.yaml", *args, "--output", str(out), "-w", "2", "--set", "slurm.retries=0",
                 env={"CURATE_FAILPOINT": "task-batch", "CURATE_FAILPOINT_ONCE": str(tmp_path / "once")})
    try:
        wait_for(lambda: stopped_array_task(out), what="an array task to stop at its failpoint")
        element = stopped_array_task(out)
        alone_in_the_queue(slurm_cluster, element)
        slurm_cluster.scancel(element)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    message = err.decode(errors="replace")
    assert proc.returncode == 2, message[-3000:]
    assert f"stage 0 task part-0000" in message and f"array task {element} as CANCELLED" in message, message
    assert "slurm.retries: 0" in message and "Traceback" not in message


@pytest.mark.slurm
def test_inside_an_allocation_the_tasks_run_as_srun_steps_of_it(slurm_cluster, tmp_path, corpus, local):
    """The driver as a batch job (an allocation of the node's 2 CPUs): it submits no array, its
    tasks are srun steps of its own job, and the bytes are the local engine's."""
    out = tmp_path / "slurm"
    command = " ".join(shlex.quote(str(a)) for a in [sys.executable, "-m", "curate.cli", "run", str(RECIPES / "quickstart.yaml"), *corpus,
                        "--output", str(out), "--engine", "slurm", *FAST, "-w", "2", "--keep-work", "--no-report"])
    res = subprocess.run(["sbatch", "--parsable", "--cpus-per-task=2", f"--output={tmp_path}/driver.out",
                          f"--export=ALL,PYTHONPATH={REPO}", "--wrap", command],
                         capture_output=True, text=True, check=True)
    driver = res.stdout.strip()
    wait_for(lambda: not slurm_cluster.squeue(), timeout=120, what="the driver's job to end")
    said = (tmp_path / "driver.out").read_text()
    assert dict((job, state) for job, state, _ in slurm_cluster.squeue("-t", "all", "-j", driver)) == \
        {driver: "COMPLETED"}, said
    assert f"inside allocation {driver}" in said and "as srun steps" in said
    assert digest(out) == local("quickstart")
    stage0 = submissions(out)["001-stage0"]
    assert sorted(s["step"] for s in stage0) == list(range(FILES)) and all("srun" == s["command"][0] for s in stage0)
    assert [j for j in slurm_cluster.squeue("-t", "all") if int(j[0].split("_")[0]) > int(driver)] == []  # no job
    record = read_manifest((out / "manifest.json").read_bytes(), "manifest.json").slurm
    assert record.driver_job == driver and record.allocation == driver
    steps = [t for t in record.tasks if t.batch == "stage0"]
    assert len(steps) == FILES and all(t.job.startswith(f"{driver}.") and t.node == slurm_cluster.node for t in steps)


@pytest.mark.slurm
@pytest.mark.slow
def test_an_embedding_recipe_on_slurm_gives_the_local_engines_bytes(slurm_cluster, cli, tmp_path, monkeypatch,
                                                                    request):
    """A model stage (embed, on CPU here: one model worker, its array throttled to %1) and two
    Global fits whose pieces go out as arrays."""
    from tests.recipes.offline import recipe_args

    args = recipe_args("text-pruning", tmp_path, cli, monkeypatch, request)
    recipe = RECIPES / "text-pruning.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    res = cli("run", recipe, *args, "--output", tmp_path / "slurm", "-w", "2", "--engine", "slurm", *FAST,
              "--keep-work")
    assert res.exit_code == 0, res.output
    assert local_digest(tmp_path / "slurm") == reference
    stage0 = submissions(tmp_path / "slurm")["001-stage0"]
    assert [s["array"] for s in stage0] == ["0-1%1"]


@pytest.mark.slurm
def test_dry_run_prints_the_launch_scripts_and_array_sizes_and_submits_nothing(slurm_cluster, cli, tmp_path, corpus):
    before = slurm_cluster.squeue("-t", "all")
    res = cli("run", RECIPES / "near-dedup.yaml", *corpus, "--output", tmp_path / "out", "-w", "2", "--engine",
              "slurm", "--dry-run", "--set", "slurm.partition=debug", "--set", "slurm.env_setup=module load foo")
    assert res.exit_code == 0, res.output
    # FILES tasks, MaxArraySize 3: two arrays, %2 each; the later stages' tasks are known only then
    assert f"2 CPUs in debug, MaxArraySize {MAX_ARRAY_SIZE}" in res.output
    assert f"stage 0: {FILES} tasks as 2 job arrays (1 CPU each, at most 2 at once): --array=0-2%2, --array=0%2 " \
           f"(offset {MAX_ARRAY_SIZE})" in res.output, res.output
    assert "stage 1: a task per shard of stage 0 (known when it ends)" in res.output
    assert "fit of 03_containment_dedup first, its parallel pieces as arrays of at most 2 tasks" in res.output
    for line in ("#SBATCH --partition=debug", "#SBATCH --job-name=curate.near-dedup.stage0", "module load foo",
                 "-m curate.engine.slurm.task BATCH_DIR"):
        assert line in res.output
    assert res.output.count("#!/bin/bash") == 3  # a launch script per stage
    res = cli("run", RECIPES / "near-dedup.yaml", *corpus, "--output", tmp_path / "out", "--engine", "slurm",
              "--dry-run", "--submit", "--set", "slurm.driver_mem=16G")
    assert res.exit_code == 0, res.output
    assert "--submit: the driver's job script" in res.output and "#SBATCH --mem=16G" in res.output
    assert "export CURATE_SLURM_DRIVER=1" in res.output and res.output.count("#!/bin/bash") == 4
    res = cli("run", RECIPES / "near-dedup.yaml", *corpus, "--output", tmp_path / "out", "-w", "2", "--engine",
              "slurm", "--dry-run", "--json")
    assert res.exit_code == 0, res.output
    planned = json.loads(res.output)["slurm"]
    assert planned["max_array_size"] == MAX_ARRAY_SIZE and planned["cpus"] == 2
    assert [a["array"] for a in planned["stages"][0]["arrays"]] == ["0-2%2", "0%2"]
    assert planned["stages"][1]["tasks"] is None and "#SBATCH --cpus-per-task=1" in planned["stages"][1]["script"]
    assert slurm_cluster.squeue("-t", "all") == before  # nothing submitted
    assert not (tmp_path / "out").exists()


def test_dry_run_without_slurm_plans_with_defaults_and_says_so(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no Slurm command here
    res = cli("run", RECIPES / "quickstart.yaml", *demo(tmp_path, 3, 30), "--output", tmp_path / "out",
              "--engine", "slurm", "--dry-run", "-w", "2")
    assert res.exit_code == 0, res.output
    assert "Slurm not reachable here" in res.output and "planned with MaxArraySize 1001" in res.output
    assert "stage 0: 3 tasks as 1 job array" in res.output and "--array=0-2%2" in res.output


def wait_for_driver(slurm_cluster, job: str, log: Path, timeout: float = 180) -> str:
    """The driver job's log, once Slurm says it ended; asserts it COMPLETED."""
    wait_for(lambda: not slurm_cluster.squeue(), timeout=timeout, what="the driver's job and its tasks to end")
    said = log.read_text() if log.exists() else "(no log)"
    assert dict((j, state) for j, state, _ in slurm_cluster.squeue("-t", "all", "-j", job)) == \
        {job: "COMPLETED"}, said
    return said


@pytest.mark.slurm
def test_submit_sends_the_driver_as_a_job_that_submits_the_arrays(slurm_cluster, cli, tmp_path, corpus, local,
                                                                  monkeypatch):
    """From a login node: `--submit` returns once the driver is a job; the driver (one CPU) submits
    each stage's arrays from there, and the bytes are the local engine's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the driver's job and its tasks import this curate
    out = tmp_path / "slurm"
    res = cli("run", RECIPES / "quickstart.yaml", *corpus, "--output", "slurm", "--engine", "slurm", *FAST,
              "-w", "2", "--keep-work", "--no-report", "--submit", "--set", "slurm.driver_time=\"10:00\"")
    assert res.exit_code == 0, res.output
    assert "submitted the driver of quickstart as Slurm job" in res.output, res.output
    job = res.output.split("as Slurm job ")[1].split(";")[0]
    [directory] = list((tmp_path / "curate-slurm").iterdir())
    script = (directory / "driver.sh").read_text()
    for line in ("#SBATCH --cpus-per-task=1", "#SBATCH --time=10:00", f"#SBATCH --chdir={tmp_path}",
                 "export CURATE_SLURM_DRIVER=1", "-m curate.cli run", "--engine slurm"):
        assert line in script, script
    said = wait_for_driver(slurm_cluster, job, directory / f"driver-{job}.out")
    assert "wrote" in said and "as a job array" in said, said
    assert digest(out) == local("quickstart")
    record = read_manifest((out / "manifest.json").read_bytes(), "manifest.json").slurm
    assert record.driver_job == job and record.allocation is None
    arrays = [j for j in record.jobs if j.batch == "stage0"]
    assert [j.array for j in arrays] == ["0-2%2", "0%2"] and all(int(j.job) > int(job) for j in arrays)


@pytest.mark.slurm
def test_submit_inside_an_allocation_runs_the_driver_as_an_srun_step(slurm_cluster, tmp_path, corpus, local):
    """Inside an allocation (a batch job of the node's 2 CPUs), `--submit` submits nothing: the
    driver runs as an srun step of it, its tasks as steps too; the bytes are the local engine's."""
    out = tmp_path / "slurm"
    command = " ".join(shlex.quote(str(a)) for a in [
        sys.executable, "-m", "curate.cli", "run", str(RECIPES / "quickstart.yaml"), *corpus, "--output", str(out),
        "--engine", "slurm", *FAST, "-w", "2", "--keep-work", "--no-report", "--submit"])
    res = subprocess.run(["sbatch", "--parsable", "--cpus-per-task=2", f"--output={tmp_path}/allocation.out",
                          f"--chdir={tmp_path}", f"--export=ALL,PYTHONPATH={REPO}", "--wrap", command],
                         capture_output=True, text=True, check=True)
    job = res.stdout.strip()
    said = wait_for_driver(slurm_cluster, job, tmp_path / "allocation.out")
    assert f"inside allocation {job}: the driver runs as an srun step of it" in said and "as srun steps" in said
    assert digest(out) == local("quickstart")
    assert not (tmp_path / "curate-slurm").exists()  # no driver job
    assert [j for j in slurm_cluster.squeue("-t", "all") if int(j[0].split("_")[0]) > int(job)] == []
    record = read_manifest((out / "manifest.json").read_bytes(), "manifest.json").slurm
    assert record.allocation == job and all(t.job.startswith(f"{job}.") for t in record.tasks)


@pytest.mark.slurm
def test_env_setup_and_a_python_wrapper_run_each_task_as_the_container_guide_says(slurm_cluster, cli, tmp_path,
                                                                                corpus, local):
    """docs/guides/slurm.md's container setup, with a wrapper that runs this Python where the guide's
    runs one in an image: env_setup's lines run before each task, slurm.python's wrapper runs it."""
    wrapper = tmp_path / "curate-python"
    wrapper.write_text(f'#!/bin/bash\necho "wrapper: $CURATE_TEST_SETUP" >&2\n'
                       f'exec {shlex.quote(sys.executable)} "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "slurm"
    res = cli("run", RECIPES / "quickstart.yaml", *corpus, "--output", out, "-w", "2", "--engine", "slurm", *FAST,
              "--keep-work", "--set", "slurm.env_setup=export CURATE_TEST_SETUP=ready",
              "--set", f"slurm.python={wrapper}")
    assert res.exit_code == 0, res.output
    assert digest(out) == local("quickstart")
    logs = list((out / "_work" / "slurm" / "attempt-1" / "001-stage0" / "logs").glob("*.out"))
    # each array task that ran (the first ones run the shares of those not started: steal) ran wrapped
    assert logs and all("wrapper: ready" in log.read_text() for log in logs)
    script = (out / "_work" / "slurm" / "attempt-1" / "001-stage0" / "launch.sh").read_text()
    assert "export CURATE_TEST_SETUP=ready\n" in script and f"exec {wrapper} -m curate.engine.slurm.task" in script


@pytest.mark.slurm
def test_a_task_over_its_memory_is_named_with_out_of_memory_and_not_submitted_again(slurm_cluster, cli, tmp_path,
                                                                                   monkeypatch):
    """A step that holds 1 GB under `slurm.mem: 300M`: the kernel kills it in its cgroup, Slurm ends
    its array task OUT_OF_MEMORY, and the run stops at once (slurm.retries left at 2) with the task
    and that state."""
    if not slurm_cluster.enforces_memory:
        pytest.skip("the one-node cluster enforces memory through cgroup v1's memory controller, which is not "
                    "writable here (Slurm 22.05 reports OUT_OF_MEMORY only from a cgroup's OOM events)")
    from curate import registry

    monkeypatch.setitem(registry.catalog(), "test_memory_hog", "tests.curate.engine.memory_ops:MemoryHog")
    recipe = tmp_path / "hog.yaml"
    recipe.write_text("name: hog\nslurm: {mem: 300M}\nsteps:\n  - test_memory_hog: {mb: 1024}\n")
    out = tmp_path / "out"
    res = cli("run", recipe, *demo(tmp_path, files=1, docs=20), "--output", out, "--engine", "slurm", *FAST)
    assert res.exit_code == 2, res.output
    # Slurm ran one array task of the stage, which it ended OUT_OF_MEMORY: none was submitted again
    [(element, state, _)] = slurm_cluster.squeue("-t", "all", "--name", "curate.hog.stage0")
    assert state == "OUT_OF_MEMORY"
    assert f"stage 0 task part-00000: Slurm ended array task {element} as OUT_OF_MEMORY" in res.output, res.output
    assert "more memory than its --mem=300M; not submitted again" in res.output and "oom-kill" in res.output
    assert "submitting it again" not in res.output and "Traceback" not in res.output


@pytest.mark.slurm
def test_nodes_that_share_no_disk_take_the_work_files_through_the_work_store(slurm_cluster, cli, tmp_path):
    """The output lies where the node cannot see it (slurmkit's private directory, a tmpfs of the
    node's own there): with `--work-store`, near-dedup's array tasks and fit pieces take their
    batches, shards, fitted state and the fit's directory from the store and put their files there;
    the publisher's merges (output.merge_shards) run in the driver; the bytes are the local engine's,
    and the store is emptied after."""
    if slurm_cluster.private is None:
        pytest.skip("needs unshare to give the node a view of its own of a directory (a disk it does not share)")
    args, recipe = [*demo(tmp_path, files=2), "--set", "output.merge_shards=true"], RECIPES / "near-dedup.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    out, store = slurm_cluster.private / tmp_path.name, tmp_path / "store"
    try:
        res = cli("run", recipe, *args, "--output", out, "-w", "2", "--engine", "slurm", *FAST,
                  "--work-store", f"file://{store}")
        assert res.exit_code == 0, res.output
        assert local_digest(out) == reference
        assert len(list((out / "data").glob("*.parquet"))) == 1  # the last stage's 2 shards, merged
        # every result came from the node, which does not see the output: stage 0's 2 tasks, at least
        # a fit's pieces, the later stages' tasks
        blind = re.search(r"Slurm: (\d+) results came from nodes that do not see", res.output)
        assert blind and int(blind.group(1)) >= 5, res.output
        assert not store.exists() or not any(store.iterdir())
        # the node's mirror of _work/ on its own disk went with the run (a small job on the node)
        wait_for(lambda: not slurm_cluster.squeue(), what="the job removing the node's mirror to end")
        seen = subprocess.run(["srun", "-N1", "-n1", "sh", "-c", f"test -e {out}/_work && echo kept || echo gone"],
                              env=slurm_cluster.env, capture_output=True, text=True, timeout=120)
        assert seen.stdout.strip() == "gone", (seen.stdout, seen.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slurm
def test_a_killed_driver_with_a_work_store_resumes_through_it(slurm_cluster, cli, tmp_path):
    """The same output where the node cannot see it: the driver is killed once stage 0 is done;
    --resume, without --work-store, continues with the store the run was given (the node's mirror
    made anew for the new driver) and gives the local engine's bytes."""
    if slurm_cluster.private is None:
        pytest.skip("needs unshare to give the node a view of its own of a directory (a disk it does not share)")
    args, recipe = demo(tmp_path, files=2), RECIPES / "near-dedup.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    out, store = slurm_cluster.private / tmp_path.name, tmp_path / "store"
    try:
        killed_at("stage-done", slurm_cluster, recipe, *args, "--output", str(out), "-w", "2",
                  "--work-store", f"file://{store}")
        res = cli("run", recipe, *args, "--output", out, "-w", "2", "--engine", "slurm", *FAST, "--resume")
        assert res.exit_code == 0, res.output
        assert "continuing with the work store the run was given" in res.output
        assert "results came from nodes that do not see" in res.output
        assert local_digest(out) == reference
    finally:
        shutil.rmtree(out, ignore_errors=True)
