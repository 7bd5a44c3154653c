"""The work store (`--work-store URI`) on a local fsspec filesystem: what a fitted state takes
with it, when a store is emptied or kept, whole-file fetches, and blind nodes' mirrors. The
Ray tests (test_ray_executor.py) run it across nodes on S3."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fsspec")

from curate.engine.work import work_store  # noqa: E402
from curate.engine.rundir.layout import StageLayout  # noqa: E402
from curate.engine.work.work_store import WorkStore, drop_mirror, mirror, state_files  # noqa: E402
from curate.errors import CurateError  # noqa: E402
from curate.fit_state import Decisions, Value  # noqa: E402


def _store(tmp_path: Path) -> tuple[WorkStore, Path]:
    work = tmp_path / "out" / "_work"
    work.mkdir(parents=True)
    (work / "run.json").write_text('{"recipe": "a"}')
    return WorkStore(f"file://{tmp_path / 'store'}", work), work


def test_a_state_takes_the_files_it_lists_and_a_state_without_files_none(tmp_path):
    fit = tmp_path / "stage-1" / "fit"
    assert state_files(Decisions(str(fit / "decisions.parquet"), "dup", 3)) == [fit / "decisions.parquet"]
    assert state_files(Value(str(fit / "decisions.parquet"))) == []  # named, not listed: not taken


def test_a_fresh_run_empties_a_store_of_curate_work_files_and_a_resume_keeps_them(tmp_path):
    store, work = _store(tmp_path)
    store.start(resume=False)
    (work / "stage-0" / "done").mkdir(parents=True)
    (work / "stage-0" / "done" / "t0.json").write_text("{}")
    store.put(work / "stage-0" / "done" / "t0.json")
    store.start(resume=True)  # the same run: kept
    assert store.read_json(work / "stage-0" / "done" / "t0.json") == {}
    (work / "run.json").write_text('{"recipe": "b"}')
    store.start(resume=True)  # another run's files: a resume does not take them
    assert store.read_json(work / "stage-0" / "done" / "t0.json") is None
    store.put(work / "stage-0" / "done" / "t0.json")
    store.start(resume=False)  # a fresh run starts from nothing
    assert store.read_json(work / "stage-0" / "done" / "t0.json") is None
    assert store.read_bytes(work / "run.json") == b'{"recipe": "b"}'


def test_a_store_holding_other_files_is_refused_and_left_alone(tmp_path):
    store, work = _store(tmp_path)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "precious.csv").write_text("a,b\n")
    with pytest.raises(CurateError, match="not a curate run's work files"):
        store.start(resume=False)
    assert (tmp_path / "store" / "precious.csv").read_text() == "a,b\n"


def test_a_fetch_writes_whole_files_and_never_replaces_one_here(tmp_path):
    store, work = _store(tmp_path)
    shard = work / "stage-0" / "data" / "t0-00000.parquet"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"stored")
    store.put(shard)
    shard.unlink()
    assert store.fetch(shard) and shard.read_bytes() == b"stored"
    shard.write_bytes(b"here")
    assert not store.fetch(shard) and shard.read_bytes() == b"here"
    missing = work / "stage-0" / "data" / "t1-00000.parquet"
    with pytest.raises(CurateError, match="missing from the work store"):
        store.fetch(missing)
    assert sorted(p.name for p in shard.parent.iterdir()) == ["t0-00000.parquet"]  # no part file left


def test_a_cut_short_marker_reads_as_not_done(tmp_path):
    store, work = _store(tmp_path)
    store.put_bytes(work / "stage-0" / "done" / "t0.json", b'{"task": "t0", "sha')
    assert store.read_json(work / "stage-0" / "done" / "t0.json") is None


def test_a_published_state_arrives_on_a_blind_node_with_its_files(tmp_path):
    store, work = _store(tmp_path)
    stage = work / "stage-1"
    (stage / "fit").mkdir(parents=True)
    (stage / "fit" / "decisions.parquet").write_bytes(b"removed rows")
    (stage / "fit.json").write_text('{"seconds": 2.5}')  # what the manifest says of a fit a resume skips
    (stage / "state.pkl").write_bytes(Decisions(str(stage / "fit" / "decisions.parquet"), "dup", 1).save())
    work_store.publish_state(store, StageLayout(str(stage)))
    blind = WorkStore(store.uri, work)  # another node: the same path, nothing there yet
    for p in ((stage / "fit" / "decisions.parquet"), (stage / "fit.json"), (stage / "state.pkl")):
        p.rename(p.with_name(p.name + ".driver"))
    assert work_store.fetch_fitted(blind, StageLayout(str(stage)))
    assert (stage / "fit" / "decisions.parquet").read_bytes() == b"removed rows"
    assert (stage / "fit.json").read_text() == '{"seconds": 2.5}'
    assert Decisions.load((stage / "state.pkl").read_bytes()).removed == 1
    assert not work_store.fetch_fitted(blind, StageLayout(str(stage)))  # here already
    assert not work_store.fetch_fitted(blind, StageLayout(str(work / "stage-2")))  # fitted nowhere yet


def test_a_resume_fetches_the_tasks_the_store_holds_as_done_with_their_files_marker_last(tmp_path):
    from curate.engine.result import TaskResult

    store, work = _store(tmp_path)
    layout = StageLayout(str(work / "stage-0"))
    for name in ("t0", "t1"):
        shard, trace = Path(layout.data) / f"{name}-00000.parquet", Path(layout.trace("01_f")) / f"{name}.parquet"
        for path in (shard, trace, Path(layout.done(name))):
            path.parent.mkdir(parents=True, exist_ok=True)
        shard.write_bytes(b"rows")
        trace.write_bytes(b"gone")
        Path(layout.done(name)).write_bytes(TaskResult(name, [shard.name], [f"01_f/{trace.name}"]).to_json())
    work_store.put_task_files(store, layout, TaskResult.from_json(Path(layout.done("t0")).read_bytes()))
    store.put(Path(layout.data) / "t1-00000.parquet")  # t1's shard went up, its marker not: not done there
    store.put_bytes(Path(layout.done("t2")), b'{"task": "t2", "sha')  # a marker cut short: not done either
    (tmp_path / "out").rename(tmp_path / "gone")  # another machine: nothing of _work/ here
    put = []
    real = store.fetch
    store.fetch = lambda path, replace=False: put.append(Path(path).name) or real(path, replace)
    assert work_store.fetch_done(store, layout, ["t0", "t1", "t2"]) == 1
    assert put == ["t0-00000.parquet", "t0.parquet", "t0.json"]  # the marker last: its presence means whole
    assert (Path(layout.data) / "t0-00000.parquet").read_bytes() == b"rows"
    assert not Path(layout.done("t1")).exists() and not Path(layout.done("t2")).exists()


def test_a_mirror_belongs_to_one_session_and_never_takes_over_a_directory_of_its_own(tmp_path):
    work = tmp_path / "out" / "_work"
    mirror(work, "s1")
    (work / "stage-0").mkdir()
    work_store._mirrored.clear()  # a new worker process
    mirror(work, "s2")  # a killed session's mirror: emptied
    assert not (work / "stage-0").exists()
    drop_mirror(work, "s1")  # not its session's: left
    assert work.exists()
    drop_mirror(work, "s2")
    assert not (tmp_path / "out").exists()  # the output directory it made, empty, goes too

    other = tmp_path / "other" / "_work"
    other.mkdir(parents=True)
    (other / "run.json").write_text("{}")
    with pytest.raises(CurateError, match="holds files of its own"):
        mirror(other, "s3")
    assert (other / "run.json").exists()


def test_input_shards_no_task_put_in_the_store_are_put_there_before_the_stage(tmp_path):
    store, work = _store(tmp_path)
    data = work / "stage-0" / "data"
    data.mkdir(parents=True)
    shards = [data / f"t{i}-00000.parquet" for i in range(3)]
    for i, shard in enumerate(shards):
        shard.write_bytes(b"shard %d" % i)
    store.put(shards[0])
    store.put_bytes(shards[1], b"put by its task")  # there already: not put again
    work_store.publish_shards(store, shards)
    assert [store.read_bytes(s) for s in shards] == [b"shard 0", b"put by its task", b"shard 2"]


def test_a_work_store_under_the_output_opens_with_the_outputs_storage_options(tmp_path):
    """The default work store of an output at a URI (its `_work/files/`) is reached as the output
    is: with output.storage_options (credentials, endpoint), not only the environment's."""
    work = tmp_path / "_work"
    assert WorkStore(f"file://{tmp_path / 'out'}", work, {"auto_mkdir": True}).fs.auto_mkdir is True
    assert WorkStore(f"file://{tmp_path / 'out'}", work).fs.auto_mkdir is False


def test_a_work_store_named_under_the_output_is_reached_as_the_output_is(tmp_path):
    """--work-store under the output's prefix takes output.storage_options; one elsewhere (even
    beside it, under a longer name) the environment's alone."""
    from curate.engine.rundir.layout import RunLayout

    layout = RunLayout.at(f"file://{tmp_path}/out", {"auto_mkdir": True})
    assert work_store.for_run(f"file://{tmp_path}/out/_work/files", layout).fs.auto_mkdir is True
    assert work_store.for_run(f"file://{tmp_path}/out-work", layout).fs.auto_mkdir is False


def test_only_shards_the_store_holds_whole_beside_the_output_are_copied_there(tmp_path):
    """held_copies: a staged file linked to a shard the store holds at its size is copied within
    the store; one whose copy there differs in size, or is missing, is uploaded; a store that is
    not on the output's filesystem copies nothing."""
    work = tmp_path / "_work"
    shards = work / "stage-0" / "data"
    shards.mkdir(parents=True)
    staged = tmp_path / "data.tmp"
    staged.mkdir()
    linked = {}
    for i, body in enumerate([b"whole", b"cut short there", b"never put"]):
        (shards / f"t{i}.parquet").write_bytes(body)
        (staged / f"part-{i:05d}.parquet").hardlink_to(shards / f"t{i}.parquet")
        linked[staged / f"part-{i:05d}.parquet"] = shards / f"t{i}.parquet"
    beside = WorkStore(f"file://{tmp_path / 'out' / '_work' / 'files'}", work, {"auto_mkdir": True})
    beside.put(shards / "t0.parquet")
    beside.put_bytes(shards / "t1.parquet", b"cut")
    assert work_store.held_copies(beside, linked) == {staged / "part-00000.parquet": beside.key(shards / "t0.parquet")}
    elsewhere = WorkStore(f"file://{tmp_path / 'store'}", work)
    elsewhere.put(shards / "t0.parquet")
    assert work_store.held_copies(elsewhere, linked) == {}
    assert work_store.held_copies(None, linked) == {}
