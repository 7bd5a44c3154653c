"""Smaller findings of a new user's trial (issue 46, part 5): options errors point to, help text
as written, summaries that end where a sentence does, messages that say what to do."""

import json
import re

import pytest
import typer
from typer._click import Context

from tests.conftest import write_jsonl


def one_line(text: str) -> str:
    return " ".join(text.split())


def every_command():
    """(path, click command, context) of curate and every command and sub-command under it."""
    from curate.cli import app

    root = typer.main.get_command(app)
    ctx = Context(root, info_name="curate")
    found = []

    def walk(command, path, ctx):
        found.append((path, command, ctx))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, f"{path} {name}", Context(sub, info_name=name, parent=ctx))

    walk(root, "curate", ctx)
    return found


def test_every_command_takes_debug(cli, tmp_path):
    """Errors say "run with --debug": after the command it must work too, not "No such option"."""
    res = cli("run", tmp_path / "missing.yaml", "--debug")
    assert "No such option" not in res.output and res.exit_code == 2, res.output
    assert "Traceback" in res.output  # the traceback it promised
    for path, command, _ in every_command():
        assert any("--debug" in p.opts for p in command.params), path


def test_help_text_keeps_its_brackets(cli):
    """Rich markup took `[ray]` of "needs curate[ray]" for a tag and dropped it."""
    for path, command, _ in every_command():
        for text in [command.help or ""] + [getattr(p, "help", "") or "" for p in command.params]:
            assert not re.search(r"(?<!\\)\[[a-z_ -]+\]", text), (path, text)
    assert "curate[ray]" in cli("run", "--help").output


def test_a_flag_shows_no_type_in_help(cli):
    out = cli("run", "--help").output
    line = next(line for line in out.splitlines() if "--resume" in line)
    assert "<bool>" not in line, line
    assert "<bool>" not in out


@pytest.mark.parametrize("name", ["llm_judge", "rephrase", "chunk"])
def test_ops_summaries_end_where_their_sentence_does(name):
    """Their docstrings' first sentence wraps over lines: the first line was cut mid-sentence."""
    from curate import registry
    from curate.describe import summary

    text = summary(registry.get(name))
    assert text.endswith("."), text
    assert text.count("(") == text.count(")") and text.count("`") % 2 == 0, text
    assert not text.startswith(f"{name}:")


def test_every_operator_summary_is_a_whole_sentence():
    from curate import registry
    from curate.describe import summary

    for name in registry.names():
        try:
            cls = registry.get(name)
        except ImportError:  # an extra not installed here
            continue
        text = summary(cls)
        assert text and text[-1] in ".)`", (name, text)


DOCS = [{"text": f"the cat number {i} sat on the mat and that was that"} for i in range(5)]


def recipe(tmp_path, steps="  - exact_dedup: {}\n"):
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                 f"steps:\n{steps}")
    return p


def test_a_run_into_a_directory_a_live_run_writes_says_to_wait(cli, tmp_path):
    """It suggested --resume or --overwrite, which the live run's lock refuses too."""
    from curate.engine.rundir.layout import RunLayout
    from curate.engine.rundir.run_dir import RunLock

    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    live = RunLock(RunLayout.at(tmp_path / "out"))
    live.acquire()
    try:
        for extra in ((), ("--resume",), ("--overwrite",)):
            res = cli("run", recipe(tmp_path), "-w", "1", *extra)
            assert res.exit_code == 2, (extra, res.output)
            err = one_line(res.stderr)
            assert "another curate run is writing here" in err, (extra, err)
            assert "use --resume" not in err and "with --overwrite" not in err, (extra, err)
            assert "wait for it to finish" in err and "another --output" in err, (extra, err)
    finally:
        live.release()


def test_a_relative_input_matching_nothing_names_the_working_directory(cli, tmp_path, monkeypatch):
    """The quickstart's data/demo/*.jsonl.gz, run from another directory: say where it looked."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: data/demo/*.jsonl.gz}}\noutput: {{path: '{tmp_path / 'out'}'}}\nsteps: []\n")
    res = cli("validate", p)
    assert res.exit_code == 2, res.output
    err = one_line(res.stderr)
    assert "no input files match data/demo/*.jsonl.gz" in err
    assert "relative to the working directory" in err and str(tmp_path / "elsewhere") in err, err
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    res = cli("validate", p, "--input", tmp_path / "in" / "*.nope")
    assert "working directory" not in res.stderr  # an absolute path: nothing to add


def test_gopher_reports_null_or_blank_text_as_no_text():
    """A row whose text is null (a JSONL record without it) or blank was reported as failing
    gopher_word_count ("word_count=0 < 50"): its own reason says what is wrong."""
    import pyarrow as pa

    from curate_operators.filters.gopher import GopherQuality

    batch = pa.RecordBatch.from_pydict({"text": [None, "   ", "too short"], "_id": list("abc")})
    verdict = GopherQuality().keep(batch)
    assert verdict.keep.tolist() == [False, False, False]
    assert verdict.reason.to_pylist() == ["no_text", "no_text", "gopher_word_count"]
    assert verdict.detail.to_pylist()[:2] == ["the text is null", "the text is blank"]


def test_containment_trace_detail_reads_as_words(tmp_path):
    """It was raw JSON ({"container": "id0000", "containment": 1.0}); the report still finds the cluster."""
    import random

    from curate_operators.dedup.containment import ContainmentDedup
    from tests.operators.dedup.helpers import run

    words = [f"w{random.Random(1).randint(0, 400)}{i}" for i in range(300)]
    texts = [" ".join(words), " ".join(words[100:160]), " ".join(words[:5])]
    verdict, _ = run(ContainmentDedup(), texts, tmp_path)
    assert verdict.keep.tolist() == [True, False, True]
    detail = verdict.detail.to_pylist()[1]
    assert detail == "contained in id0000 (containment 1.0)", detail


def test_blank_jsonl_lines_are_counted_in_the_manifest(cli, tmp_path, manifest_at):
    """Blank lines were skipped without a trace or a count: the read step's counts say how many."""
    (tmp_path / "in").mkdir()
    lines = [json.dumps(d) for d in DOCS]
    (tmp_path / "in" / "a.jsonl").write_text("\n".join([lines[0], "", lines[1], "   ", "", *lines[2:]]) + "\n\n")
    res = cli("run", recipe(tmp_path), "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(tmp_path / "out")
    read = manifest.steps[0]
    assert read.op == "read" and read.rows_out == len(DOCS)
    assert read.counts == {"blank_lines": 4}, read


def test_the_reports_sources_name_input_files_when_the_input_has_its_own_ids(cli, tmp_path):
    """With input.id_column the `_id`s name no file: the Sources section was empty."""
    from curate.manifest import read as read_manifest
    from curate.report import sources
    from curate.report.scan import Run

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": f"a{i}", "text": d["text"]} for i, d in enumerate(DOCS)])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"id": "b0", "text": DOCS[0]["text"]}, {"id": "b1", "text": "x y"}])
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}', id_column: id}}\n"
                 f"output: {{path: '{tmp_path / 'out'}'}}\nsteps:\n  - exact_dedup: {{}}\n")
    res = cli("run", p, "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    run = Run.open(tmp_path / "out", read_manifest((tmp_path / "out" / "manifest.json").read_bytes(), "manifest.json"))
    (grouping,) = sources.groupings(run)
    assert grouping.title == "by input file"
    table = {r[0]: r[1:4] for r in sources.rows(run, grouping)}
    assert table == {"a.jsonl": [5, 5, 0], "b.jsonl": [2, 1, 1]}, table


def _inputs_with_an_empty_file(tmp_path, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "in").mkdir(exist_ok=True)
    if kind == "jsonl":
        write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
        (tmp_path / "in" / "b.jsonl").write_bytes(b"")
        return f"{tmp_path / 'in' / '*.jsonl'}", "b.jsonl"
    pq.write_table(pa.table({"text": [d["text"] for d in DOCS]}), tmp_path / "in" / "a.parquet")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), tmp_path / "in" / "b.parquet")
    return f"{tmp_path / 'in' / '*.parquet'}", "b.parquet"


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_an_empty_input_file_is_skipped_and_counted_whatever_its_format(cli, tmp_path, kind, manifest_at):
    """An empty JSONL file stopped the run (exit 2) where an empty Parquet file did not: now
    both are skipped, counted in the manifest and warned about; `on_bad_row: fail` refuses both."""
    pattern, empty = _inputs_with_an_empty_file(tmp_path, kind)
    res = cli("run", "-w", "1", "--no-report", recipe(tmp_path), "--input", pattern)
    assert res.exit_code == 0, res.output
    assert "1 input file was empty" in one_line(res.stderr), res.stderr
    read = manifest_at(tmp_path / "out").steps[0]
    assert read.rows_out == len(DOCS) and read.counts["empty_files"] == 1, read
    res = cli("run", "-w", "1", "--no-report", recipe(tmp_path), "--input", pattern, "--overwrite",
              "--set", "input.on_bad_row=fail")
    assert res.exit_code == 2, res.output
    assert f"{empty}: the file is empty" in one_line(res.stderr), res.stderr


def test_an_input_of_only_empty_files_is_refused(cli, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(b"")
    res = cli("run", "-w", "1", recipe(tmp_path))
    assert res.exit_code == 2 and "a.jsonl: the file is empty" in one_line(res.stderr), res.output
