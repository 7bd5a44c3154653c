"""A fit's directory kept alike across nodes through the work store (shared_dir.py), on a local
fsspec filesystem: two work directories stand for the run process's node and a blind node. The
Ray tests (test_ray_executor.py) run it across nodes on S3."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fsspec")

from curate.engine.work import shared_dir  # noqa: E402
from curate.engine.work.work_store import WorkStore  # noqa: E402


class Counted(WorkStore):
    """A work store that counts the files put in it and fetched from it."""

    def __init__(self, uri: str, work: Path):
        super().__init__(uri, work)
        self.puts, self.fetches = [], []

    def put(self, path: Path) -> None:
        self.puts.append(Path(path).name)
        super().put(path)

    def fetch(self, path: Path, replace: bool = False) -> bool:
        self.fetches.append(Path(path).name)
        return super().fetch(path, replace)


def _nodes(tmp_path: Path) -> tuple[Counted, Path, Counted, Path]:
    """The run process's store and fit directory, and a blind node's (the same store)."""
    uri = f"file://{tmp_path / 'store'}"
    head, blind = Counted(uri, tmp_path / "head" / "_work"), Counted(uri, tmp_path / "blind" / "_work")
    fit = head.work / "stage-1" / "fit"
    fit.mkdir(parents=True)
    return head, fit, blind, blind.work / "stage-1" / "fit"


def _double(src: Path, dst: Path) -> int:
    """A piece: reads a file the fit wrote, writes one into a directory the fit made."""
    data = src.read_bytes()
    dst.write_bytes(data * 2)
    return len(data)


def test_a_pieces_inputs_reach_the_blind_node_and_its_outputs_come_back_once(tmp_path):
    head, fit, blind, mirror = _nodes(tmp_path)
    (fit / "rank.npy").write_bytes(b"rank")
    (fit / "parts").mkdir()  # empty: a piece writes into it
    pushed: dict = {}
    view = shared_dir.push(head, fit, pushed)
    result, written = shared_dir.run_piece(blind, mirror, view, _double, (mirror / "rank.npy", mirror / "parts" / "p0"))
    assert result == 4 and written.keys() == {"parts/p0"}
    assert shared_dir.receive(head, fit, [written], pushed) == 1
    assert (fit / "parts" / "p0").read_bytes() == b"rankrank"
    head.puts.clear()
    blind.fetches.clear()
    view = shared_dir.push(head, fit, pushed)  # the piece's file, fetched here, is not put back
    assert head.puts == []
    shared_dir.run_piece(blind, mirror, view, lambda: None, ())  # nor fetched again where it was made
    assert blind.fetches == []


def test_a_file_the_fit_rewrites_between_maps_reaches_the_blind_node_again(tmp_path):
    head, fit, blind, mirror = _nodes(tmp_path)
    pushed: dict = {}
    (fit / "cut.npy").write_bytes(b"one")
    shared_dir.run_piece(blind, mirror, shared_dir.push(head, fit, pushed), lambda: None, ())
    (fit / "cut.npy").write_bytes(b"second")
    view = shared_dir.push(head, fit, pushed)
    assert shared_dir.run_piece(blind, mirror, view, lambda p: p.read_bytes(), (mirror / "cut.npy",))[0] == b"second"


def test_a_file_the_fit_is_still_writing_travels_once_closed(tmp_path):
    head, fit, _, _ = _nodes(tmp_path)
    pushed: dict = {}
    with open(fit / "sigs.bin", "wb") as f:  # appended to between the maps of a stream
        f.write(b"x" * 10)
        f.flush()
        assert "sigs.bin" not in shared_dir.push(head, fit, pushed)[1]
    assert "sigs.bin" in shared_dir.push(head, fit, pushed)[1]
    assert head.puts == ["sigs.bin"]


def test_a_file_another_piece_was_still_writing_comes_back_whole(tmp_path):
    """Two pieces at once on the blind node: the first ends while the second's file is half
    written and puts it as it is; the second puts it whole after. The run process takes the
    whole one, stamped as the newest version, so the next map moves nothing."""
    head, fit, blind, mirror = _nodes(tmp_path)
    pushed: dict = {}
    view = shared_dir.push(head, fit, pushed)
    mirror.mkdir(parents=True)
    out = mirror / "edges"
    first = shared_dir.run_piece(blind, mirror, view, out.write_bytes, (b"half",))[1]
    second = shared_dir.run_piece(blind, mirror, view, out.write_bytes, (b"half and the rest",))[1]
    assert first.keys() == second.keys() == {"edges"}
    shared_dir.receive(head, fit, [second, first], pushed)
    assert (fit / "edges").read_bytes() == b"half and the rest"
    head.puts.clear()
    blind.fetches.clear()
    shared_dir.run_piece(blind, mirror, shared_dir.push(head, fit, pushed), lambda: None, ())
    assert head.puts == [] and blind.fetches == []


def test_a_file_another_piece_of_the_node_put_is_not_put_again(tmp_path):
    """A piece that ran (start to end) while another ran on the same node: the outer one finds
    the inner one's file changed since it started, but that version is in the store already."""
    head, fit, blind, mirror = _nodes(tmp_path)
    view = shared_dir.push(head, fit, {})
    mirror.mkdir(parents=True)
    inner = (mirror / "links").write_bytes, (b"links",)
    outer = shared_dir.run_piece(blind, mirror, view, lambda: shared_dir.run_piece(blind, mirror, view, *inner), ())
    assert outer[0][1].keys() == {"links"} and outer[1] == {}
    assert blind.puts == ["links"]


def test_a_scratch_file_gone_before_it_is_put_is_left_out(tmp_path):
    """A file listed as changed that is gone when put (a duckdb spill file of a piece still
    running) is no output."""
    head, fit, blind, mirror = _nodes(tmp_path)
    view = shared_dir.push(head, fit, {})
    mirror.mkdir(parents=True)
    put = blind.put

    def put_once_spill_is_gone(path):
        if Path(path).name == "spill":
            Path(path).unlink()
        put(path)

    blind.put = put_once_spill_is_gone

    def piece():
        (mirror / "spill").write_bytes(b"tmp")
        (mirror / "part").write_bytes(b"rows")

    assert shared_dir.run_piece(blind, mirror, view, piece, ())[1].keys() == {"part"}


def test_a_file_in_the_store_that_is_not_the_last_version_written_stops_the_run(tmp_path):
    """A node that died writing a file can have put it half written after its retry elsewhere put
    it whole: the run process takes no file but the version the pieces said they wrote last."""
    from curate.errors import CurateError

    head, fit, blind, mirror = _nodes(tmp_path)
    pushed: dict = {}
    view = shared_dir.push(head, fit, pushed)
    mirror.mkdir(parents=True)
    written = shared_dir.run_piece(blind, mirror, view, (mirror / "links").write_bytes, (b"whole links",))[1]
    (mirror / "links").write_bytes(b"half")
    blind.put(mirror / "links")
    with pytest.raises(CurateError, match="not the version the fit's pieces wrote last"):
        shared_dir.receive(head, fit, [written], pushed)
