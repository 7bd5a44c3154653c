"""A Global fit's work files: recorded in the manifest, and removed once the state is written
except those the state reads (a run's disk holds one fit's intermediates at a time)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from curate import recipe
from curate.engine.run import fit as fit_module
from curate.engine.run.fit import drop_unread, work_bytes
from curate.engine.run.runner import RunOptions, run
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit

STEPS = """
steps:
  - exact_dedup: {}
  - containment_dedup: {threshold: 0.8, ngram: 3}
"""


def corpus(root: Path) -> str:
    words = [f"w{i}" for i in range(400)]
    rows = [{"text": " ".join(words[i: i + 40])} for i in range(0, 300, 7)]
    rows += [{"text": " ".join(words[i + 5: i + 30])} for i in range(0, 300, 21)]  # contained in the ones above
    rows += rows[:5]  # exact copies
    write_jsonl(root / "part-0.jsonl.gz", rows)
    return str(root / "*.jsonl.gz")


def load(inp: str, out: Path) -> recipe.Recipe:
    return recipe.load(text=f"input: {{path: '{inp}', batch_rows: 16}}\noutput: {{path: '{out}'}}\n{STEPS}")


def digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*.parquet")) if "_work" not in p.parts}


def test_a_fit_keeps_only_what_its_state_reads_and_the_manifest_says_what_it_held(tmp_path, monkeypatch):
    inp = corpus(tmp_path / "in")
    left: dict[str, list[str]] = {}

    def recording(fit_dir: Path, read: list[Path]) -> None:
        drop_unread(fit_dir, read)
        left[fit_dir.parent.name] = sorted(str(p.relative_to(fit_dir)) for p in fit_dir.rglob("*"))

    monkeypatch.setattr(fit_module, "drop_unread", recording)
    manifest = run(load(inp, tmp_path / "out"), RunOptions(workers=2))
    containment = next(s for s in manifest.steps if s.op == "containment_dedup")
    assert containment.removed > 0
    # the band rows and shingle samples were there, and are gone: only the decisions stay
    assert containment.work_bytes["buckets"] > 0 and containment.work_bytes["samples.bin"] > 0
    assert left["stage-2"] == ["decisions.parquet"]
    kept = run(load(inp, tmp_path / "kept"), RunOptions(workers=2, keep_work=True))
    assert (tmp_path / "kept" / "_work" / "stage-2" / "fit" / "buckets").is_dir()  # --keep-work keeps them
    assert digests(tmp_path / "out") == digests(tmp_path / "kept")
    assert kept.rows_out == manifest.rows_out


def test_drop_unread_keeps_the_files_read_their_directories_and_what_a_kept_directory_holds(tmp_path):
    fit_dir = tmp_path / "fit"
    for name in ["a/b/keep.parquet", "a/b/drop.bin", "a/drop.bin", "index/x", "index/sub/y", "spill/z", "top.npy"]:
        (fit_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (fit_dir / name).write_bytes(b"12345")
    assert work_bytes(fit_dir) == {"a": 15, "index": 10, "spill": 5, "top.npy": 5}
    drop_unread(fit_dir, [fit_dir / "a" / "b" / "keep.parquet", fit_dir / "index"])
    assert sorted(str(p.relative_to(fit_dir)) for p in fit_dir.rglob("*")) == [
        "a", "a/b", "a/b/keep.parquet", "index", "index/sub", "index/sub/y", "index/x"]


def test_a_run_stopped_after_the_state_was_written_drops_the_rest_on_resume(tmp_path, monkeypatch):
    inp = corpus(tmp_path / "in")
    path = tmp_path / "r.yaml"
    path.write_text(f"input: {{path: '{inp}', batch_rows: 16}}\noutput: {{path: '{tmp_path / 'out'}'}}\n{STEPS}")
    proc = faultkit.start(path, failpoint="state-written@2")  # containment's state saved, its work files not yet removed
    assert faultkit.wait_for_failpoint(proc), proc.stderr.read().decode()
    faultkit.kill(proc, whole_group=True)
    assert (tmp_path / "out" / "_work" / "stage-2" / "fit" / "buckets").is_dir()
    left: dict[str, list[str]] = {}

    def recording(fit_dir: Path, read: list[Path]) -> None:
        drop_unread(fit_dir, read)
        left[fit_dir.parent.name] = sorted(str(p.relative_to(fit_dir)) for p in fit_dir.rglob("*"))

    monkeypatch.setattr(fit_module, "drop_unread", recording)
    run(recipe.load(path), RunOptions(workers=2, resume=True))
    assert left["stage-2"] == ["decisions.parquet"]
