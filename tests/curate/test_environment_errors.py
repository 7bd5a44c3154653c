"""Errors that come from the user's environment, not from curate (issue 46, part 4): an output
directory curate may not write, a missing optional package, what the run would refuse that
`validate` must find first, and a run without row traces. Each exits 2 with what to do, never
exit 1 "this is a bug in curate"."""

import os
import subprocess
import sys

import pytest

from tests.conftest import write_jsonl

DOCS = [{"text": f"the cat number {i} sat on the mat and that was that"} for i in range(5)]


def one_line(text: str) -> str:
    return " ".join(text.split())


def recipe(tmp_path, out, steps="  - exact_dedup: {}\n", extra=""):
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\n"
                 f"output: {{path: '{out}'{extra}}}\nsteps:\n{steps}")
    return p


def _writable(directory) -> bool:
    try:
        (directory / ".probe").touch()
    except OSError:
        return False
    (directory / ".probe").unlink()
    return True


@pytest.fixture
def unwritable_dir(tmp_path):
    """A directory nobody here may create anything in: mode 555, and, for root (whom modes do
    not stop), the immutable attribute (chattr +i); skipped where neither works."""
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    immutable = False
    if _writable(d):
        d.chmod(0o755)
        immutable = subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode == 0
        if not immutable or _writable(d):
            if immutable:
                subprocess.run(["chattr", "-i", str(d)])
            pytest.skip("no way to make a directory unwritable here (root without chattr)")
    yield d
    if immutable:
        subprocess.run(["chattr", "-i", str(d)])
    d.chmod(0o755)


def test_an_output_directory_curate_may_not_write_exits_2_naming_it(cli, tmp_path, unwritable_dir):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    out = unwritable_dir / "out"
    r = recipe(tmp_path, out)
    for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
        res = cli(*args)
        assert res.exit_code == 2, (args, res.output)
        assert str(unwritable_dir) in one_line(res.stderr), (args, res.stderr)
        assert "bug in curate" not in res.stderr and "not writable" in one_line(res.stderr)
    assert not out.exists()


@pytest.mark.parametrize("debug", [False, True])
def test_a_permission_error_anywhere_is_the_users_not_a_bug(capsys, monkeypatch, debug):
    """Whatever path it comes from (a directory made late, a file read), a PermissionError or a
    read-only file system is exit 2 with the path, not "this is a bug in curate"; with --debug
    too, whose traceback is the exception's own, outside the except block that caught it."""
    import errno

    import typer

    from curate import cli_errors
    from curate.cli_errors import fail

    monkeypatch.setattr(cli_errors, "show_tracebacks", debug)  # not what an earlier CLI call left

    for exc in (PermissionError(errno.EACCES, "Permission denied", "/data/run/trace"),
                OSError(errno.EROFS, "Read-only file system", "/mnt/ro/out"),
                PermissionError("[Errno 13] Cannot create directory '/x/y'. Detail: [errno 13] Permission denied")):
        with pytest.raises(typer.Exit) as e:
            fail(exc)
        assert e.value.exit_code == 2
        err = capsys.readouterr().err
        assert "bug in curate" not in err
        assert (exc.filename or "/x/y") in err


def curate_without(package: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`curate ARGS` in a process where `import PACKAGE` fails as if it were not installed."""
    code = (f"import sys; sys.modules[{package!r}] = None; sys.argv = ['curate', *{list(map(str, args))!r}]\n"
            "from curate.cli import main; main()")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("package, args, extra", [
    ("threadpoolctl", ("validate", "recipes/text-pruning.yaml", "--no-data"), "embed"),
    ("aiohttp", ("serve-mock", "--port", "0"), "llm"),
])
def test_a_missing_optional_package_names_the_extra_to_install(package, args, extra):
    res = curate_without(package, *args, cwd=ROOT)
    assert res.returncode == 2, res.stderr
    err = one_line(res.stderr)
    assert package in err and f"pip install 'curate[{extra}]'" in err, err
    assert "bug in curate" not in err


def test_ops_lists_an_operator_without_its_package_with_the_extra():
    res = curate_without("threadpoolctl", "ops", cwd=ROOT)
    assert res.returncode == 0, res.stderr
    line = next(line for line in res.stdout.splitlines() if "semantic_dedup" in line)
    assert "curate[embed]" in line and "No module" not in line and "halted" not in line, line


def test_validate_refuses_a_step_whose_package_is_missing_before_any_worker(tmp_path):
    """language_id imports py3langid only in its workers' setup: validate must find it missing."""
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, tmp_path / "out", "  - language_id: {languages: [en]}\n")
    for args in (("validate", r, "--no-data"), ("validate", r), ("run", r, "-w", "1")):
        res = curate_without("py3langid", *args)
        assert res.returncode == 2, (args, res.stderr)
        assert "pip install 'curate[web]'" in one_line(res.stderr) and "steps[0].language_id" in res.stderr
    assert not (tmp_path / "out").exists()


def test_the_report_of_a_run_without_row_traces(cli, tmp_path):
    """output.trace_rows: false keeps ids and reasons only: `curate report` must still work."""
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS + DOCS[:2] + [{"text": "too short"}])
    r = recipe(tmp_path, tmp_path / "out", "  - gopher_quality: {min_words: 5}\n  - exact_dedup: {}\n",
               extra=", trace_rows: false")
    res = cli("run", r, "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    res = cli("report", tmp_path / "out")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "out" / "report.html").read_text()
    assert "gopher_word_count" in html and "exact_duplicate" in html


@pytest.mark.parametrize("step", ["gopher_quality: {}", "normalize_text: {}"])
def test_validate_refuses_a_text_column_that_is_not_text(cli, tmp_path, step):
    """The run's workers refuse an int text column ("must be text"): validate says so first."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": i} for i in range(3)])
    r = recipe(tmp_path, tmp_path / "out", f"  - {step}\n")
    for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
        res = cli(*args)
        assert res.exit_code == 2, (args, res.output)
        err = one_line(res.stderr)
        assert "column 'text' must be text" in err and "steps[0]" in err and "a.jsonl" in err, err
        assert "stage 0" not in err  # refused before any worker started
    assert not (tmp_path / "out").exists()


def test_validate_refuses_an_embedding_model_not_on_this_machine(cli, tmp_path):
    """The model pool would refuse a hub id the local cache lacks only once it loads it."""
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, tmp_path / "out", "  - embed: {backend: sentence_transformers, "
                                           "model: curate-tests/no-such-model-46}\n")
    for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
        res = cli(*args)
        assert res.exit_code == 2, (args, res.output)
        err = one_line(res.stderr)
        assert "curate-tests/no-such-model-46" in err and "is not on this machine" in err, err
        assert "stage 0" not in err
    assert not (tmp_path / "out").exists()


def test_validate_refuses_an_embedding_backend_whose_package_is_missing(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, tmp_path / "out", "  - embed: {backend: sentence_transformers}\n")
    res = curate_without("sentence_transformers", "validate", r, "--no-data")
    assert res.returncode == 2, res.stderr
    assert "pip install 'curate[embed]'" in one_line(res.stderr) and "steps[0].embed" in res.stderr


@pytest.mark.parametrize("package, step, extra", [
    ("tokenizers", "token_count: {tokenizer: gpt2}", "web"),
    ("tokenizers", "tokenize: {tokenizer: gpt2}", "web"),
    ("pysbd", "chunk: {}", "llm"),
])
def test_validate_refuses_steps_whose_worker_package_is_missing(tmp_path, package, step, extra):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, tmp_path / "out", f"  - {step}\n")
    res = curate_without(package, "validate", r, "--no-data")
    assert res.returncode == 2, res.stderr
    assert f"pip install 'curate[{extra}]'" in one_line(res.stderr) and "steps[0]." in res.stderr
