"""A run directory read by the usual tools (issue 46, part 5): `datasets.load_dataset(RUN_DIR)`
loads the data alone (the run's own README.md card says which files are the data), and the
trace directory reads as one table."""

import json

import pyarrow.parquet as pq

from tests.conftest import write_jsonl

DOCS = [{"text": f"the cat number {i} sat on the mat and that was that", "n": i} for i in range(5)]


def _run(cli, tmp_path, *extra):
    (tmp_path / "in").mkdir(exist_ok=True)
    lines = [json.dumps(d) for d in DOCS + [DOCS[0]]]  # a line that is no JSON, a duplicate
    if not (tmp_path / "in" / "a.jsonl").exists():
        (tmp_path / "in" / "a.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                 "steps:\n  - exact_dedup: {}\n")
    res = cli("run", p, "-w", "1", "--no-report", *extra)
    assert res.exit_code == 0, res.output
    return tmp_path / "out"


def test_load_dataset_reads_the_run_directory(cli, tmp_path):
    import datasets

    out = _run(cli, tmp_path)
    assert (out / "README.md").is_file()
    ds = datasets.load_dataset(str(out), split="train")
    assert ds.num_rows == len(DOCS) and "text" in ds.column_names and "reason" not in ds.column_names
    trace = datasets.load_dataset(str(out), "trace", split="train")  # the second config: the trace
    assert sorted(trace["step"]) == ["00_read", "01_exact_dedup"]
    first = (out / "README.md").read_bytes()
    from curate.card import card_text
    assert card_text(out).encode() == first  # from the manifest and the data alone
    _run(cli, tmp_path, "--overwrite")  # the card is the run's own: --overwrite replaces it
    again = (out / "README.md").read_bytes()

    def undated(b):  # what differs is what the manifest holds: the dates and seconds
        return [line for line in b.decode().splitlines() if not line.startswith("- run from")]
    assert undated(first) == undated(again)


def test_the_run_directorys_card_marks_it_as_curates(cli, tmp_path):
    from curate.engine.rundir.layout import OUTPUT, PUBLISHED

    assert "README.md" in OUTPUT and "README.md" in PUBLISHED


def test_the_trace_directory_reads_as_one_table(cli, tmp_path):
    """`00_read`'s `row` was {raw} and a filter's the row's columns: read as one table, the
    filter's rows came back as {raw: null} (the first file's schema). Every trace file now has
    one schema: `row` holds every column traced, the unparseable line's text as `raw`."""
    out = _run(cli, tmp_path)
    assert sorted(p.name for p in (out / "trace").iterdir()) == ["00_read.parquet", "01_exact_dedup.parquet"]
    rows = pq.read_table(out / "trace").to_pylist()
    by_step = {r["step"]: r for r in rows}
    assert len(rows) == 2 and set(by_step) == {"00_read", "01_exact_dedup"}, rows
    assert by_step["00_read"]["row"] == {"raw": "{not json", "text": None, "n": None}
    assert by_step["01_exact_dedup"]["row"] == {"raw": None, **DOCS[0]}
    assert by_step["01_exact_dedup"]["reason"] == "exact_duplicate"
