"""Publishing a run to the Hugging Face Hub (output.path: hf://datasets/ORG/NAME, curate/io/hub.py),
against the loopback stand-in Hub of hubkit.py (no real Hub can be reached here): one commit of
the shards in the Hub's layout, the card and the manifest; load_dataset reads it back; a kill
during the upload and --resume leave one complete commit; credentials and a repository that
cannot take the run are refused (exit 2) before any work; the token is in no file or log."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.curate.io.hubkit import StandInHub

pytest.importorskip("huggingface_hub")

ROOT = Path(__file__).resolve().parents[3]
CURATE = [sys.executable, "-m", "curate.cli"]
TOKEN = "hf_standin_secret_write_token_0123456789"
READ_TOKEN = "hf_standin_read_only_token_0123456789"

RECIPE = """name: hubrun
input: {path: INPUT/*.jsonl, text_column: text, id_column: id}
output: {path: out}
steps:
  - normalize_text: {}
  - sql_filter: {where: "length(text) >= 20"}
  - exact_dedup: {}
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("hubcorpus")
    (root / "in").mkdir()
    for f in range(2):
        with open(root / "in" / f"part-{f}.jsonl", "w") as out:
            for i in range(40):
                text = "short" if i % 9 == 0 else f"document {i % 30} of the corpus, with words enough to stay"
                out.write(json.dumps({"id": f"{f}-{i}", "text": text}) + "\n")
    (root / "recipe.yaml").write_text(RECIPE.replace("INPUT", str(root / "in")))
    return root


@pytest.fixture()
def hub():
    h = StandInHub({TOKEN: ("alice", "write"), READ_TOKEN: ("alice", "read")})
    yield h
    h.stop()


def _env(hub, tmp: Path, token: str | None = TOKEN, **more) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "CURATE_FAILPOINT"))}
    env.update({"HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp / "hfhome"),
                "CURATE_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(ROOT), **more})
    if token:
        env["HF_TOKEN"] = token
    return env


def _run(corpus, hub, tmp, *args, token=TOKEN, **env):
    return subprocess.run([*CURATE, "run", str(corpus / "recipe.yaml"), "-w", "1", "--no-report", *args],
                          env=_env(hub, tmp, token, **env), capture_output=True, text=True, cwd=tmp, timeout=120)


def _shards(split: str, n: int) -> list[str]:
    return [f"data/{split}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def _files_hold(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_run_is_published_in_one_commit_that_load_dataset_reads(corpus, hub, tmp_path):
    p = _run(corpus, hub, tmp_path, "-o", "hf://datasets/alice/curated", "--set", "output.hub.trace=true",
             "--set", "output.hub.license=odc-by", "--set", "output.hub.language=en", CURATE_LOG_LEVEL="DEBUG")
    assert p.returncode == 0, p.stderr
    assert "published" in p.stdout and "Traceback" not in p.stderr
    files = hub.files("alice/curated")
    manifest = json.loads(files["manifest.json"])
    commits = hub.commits("alice/curated")  # one commit of ours
    assert [c["message"] for c in commits] == ["initial commit", f"curate: hubrun, {manifest['rows_out']} rows"]
    staged = Path(p.stdout.split("the run: ")[1].split()[0])
    local = sorted((staged / "data").glob("*.parquet"))
    shards = _shards("train", len(local))
    assert sorted(files) == [".gitattributes", "README.md", *shards, "manifest.json",
                             "trace/02_sql_filter.parquet", "trace/03_exact_dedup.parquet"]
    assert files["manifest.json"] == (staged / "manifest.json").read_bytes()
    assert [files[s] for s in shards] == [f.read_bytes() for f in local]

    from huggingface_hub import DatasetCard

    card = DatasetCard(files["README.md"].decode())
    assert card.data.license == "odc-by" and card.data.language == ["en"]
    assert card.data.size_categories == ["n<1K"]
    assert card.data.configs == [{"config_name": "default", "default": True,
                                  "data_files": [{"split": "train", "path": ["data/train-*.parquet"]}]}]

    # load_dataset through the stand-in Hub, as a user would: the run's rows, in the train split
    load = subprocess.run([sys.executable, "-c", "import json; from datasets import load_dataset; "
                           "d = load_dataset('alice/curated'); print(json.dumps({k: sorted(v['_id']) for k, v in d.items()}))"],
                          env=_env(hub, tmp_path, HF_HOME=str(tmp_path / "reader")), capture_output=True, text=True,
                          timeout=120)
    assert load.returncode == 0, load.stderr
    ids = sorted(i for f in local for i in pq.read_table(f, columns=["_id"]).column("_id").to_pylist())
    assert json.loads(load.stdout.strip().splitlines()[-1]) == {"train": ids}
    assert len(ids) == manifest["rows_out"] > 0

    # The token is in no file of the run, of the repository, of the reader's cache, nor in the logs
    assert TOKEN not in p.stdout + p.stderr + load.stdout + load.stderr
    assert _files_hold(tmp_path, TOKEN) == []
    assert [path for path, data in files.items() if TOKEN.encode() in data] == []

    # Published again (--resume of the finished run): the Hub holds it already, no commit more
    again = _run(corpus, hub, tmp_path, "-o", "hf://datasets/alice/curated", "--resume",
                 "--set", "output.hub.trace=true")
    assert again.returncode == 0, again.stderr
    assert "held it already" in again.stdout
    assert len(hub.commits("alice/curated")) == 2


def test_a_kill_during_the_upload_then_resume_leaves_one_complete_commit(corpus, hub, tmp_path):
    proc = subprocess.Popen([*CURATE, "run", str(corpus / "recipe.yaml"), "-w", "1", "--no-report",
                             "-o", "hf://datasets/alice/killed"],
                            env=_env(hub, tmp_path, CURATE_FAILPOINT="hub-uploaded"), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        line = ""
        while "failpoint hub-uploaded" not in line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline()
        assert "failpoint hub-uploaded" in line
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # Killed after its shards went up, before the commit: the repository shows nothing of it
    assert [c["message"] for c in hub.commits("alice/killed")] == ["initial commit"]
    uploaded = dict(hub.puts)
    assert uploaded and set(uploaded.values()) == {1}

    p = _run(corpus, hub, tmp_path, "-o", "hf://datasets/alice/killed", "--resume")
    assert p.returncode == 0, p.stderr
    commits = hub.commits("alice/killed")
    assert len(commits) == 2
    files = hub.files("alice/killed")
    shards = _shards("train", len(uploaded))
    assert sorted(files) == [".gitattributes", "README.md", *shards, "manifest.json"]
    assert hub.puts == uploaded  # the shards' content was not uploaded again
    rows = sum(pq.ParquetFile(io.BytesIO(files[s])).metadata.num_rows for s in shards)
    assert rows == json.loads(files["manifest.json"])["rows_out"] > 0
    assert _files_hold(tmp_path, TOKEN) == []


@pytest.mark.parametrize("case", ["no token", "refused token", "read-only token", "other content"])
def test_what_cannot_be_published_is_refused_before_any_work(corpus, hub, tmp_path, case):
    token = {"no token": None, "refused token": "hf_not_a_token_the_hub_knows", "read-only token": READ_TOKEN}.get(case, TOKEN)
    if case == "other content":
        hub.create("alice/taken", files={"notes.txt": b"someone's data"})
    p = _run(corpus, hub, tmp_path, "-o", f"hf://datasets/alice/{'taken' if case == 'other content' else 'new'}",
             token=token)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    said = " ".join(p.stderr.split())
    assert {"no token": "needs a token with write access: set HF_TOKEN",
            "refused token": "the Hub refused the token",
            "read-only token": "the token is read-only",
            "other content": "holds files curate did not publish (notes.txt)"}[case] in said
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("manifest.json"))  # no work done
    assert not any(r[2] in ("preupload", "lfs_upload", "commit", "create") for r in hub.requests)
    if token:
        assert token not in p.stdout + p.stderr


# --- publishing in this process, from one finished run -----------------------------------------


@pytest.fixture(scope="module")
def staged(corpus, tmp_path_factory):
    """A finished run in a directory of its own, and its recipe (to publish it in-process)."""
    out = tmp_path_factory.mktemp("staged") / "run"
    p = subprocess.run([*CURATE, "run", str(corpus / "recipe.yaml"), "-w", "1", "--no-report", "-o", str(out)],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture()
def in_process(hub, monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr("curate.io.hub_calls.time.sleep", lambda s: None)
    return hub


def _recipe(corpus, repo: str, **hub_settings):
    from curate.recipe import load

    sets = [f"output.hub.{k}={v}" for k, v in hub_settings.items()]
    return load(corpus / "recipe.yaml", overrides=sets, output_path=f"hf://datasets/{repo}")


def test_rate_limits_are_retried_and_counted(corpus, staged, in_process):
    from curate.io import hub as hub_module

    in_process.fail("whoami", 429)
    in_process.fail("commit", 429, 503)
    said = []
    result = hub_module.publish(staged, _recipe(corpus, "alice/busy"), status=said.append)
    assert result["retries"] == 3 and result["retry_reasons"] == {"429": 2, "503": 1}
    assert len(in_process.commits("alice/busy")) == 2
    assert any("answered 429" in s for s in said)
    assert TOKEN not in " ".join(said)


def test_a_rate_limit_that_lasts_is_an_error(corpus, staged, in_process):
    from curate.errors import CurateError
    from curate.io import hub as hub_module, hub_calls

    in_process.fail("commit", *[429] * hub_calls.ATTEMPTS)  # (preupload is retried by huggingface_hub itself too)
    with pytest.raises(CurateError, match="kept refusing"):
        hub_module.publish(staged, _recipe(corpus, "alice/throttled"))
    assert [c["message"] for c in in_process.commits("alice/throttled")] == ["initial commit"]
    in_process.fail("commit", 412)  # another writer moved the branch since it was read: never overwritten blindly
    with pytest.raises(CurateError, match="the branch moved while publishing"):
        hub_module.publish(staged, _recipe(corpus, "alice/throttled"))
    hub_module.publish(staged, _recipe(corpus, "alice/throttled"))  # published once tried again
    assert len(in_process.commits("alice/throttled")) == 2


def test_an_earlier_run_is_replaced_and_its_stale_files_deleted(corpus, staged, in_process, tmp_path):
    from curate.errors import CurateError
    from curate.io import hub as hub_module

    # a whole manifest (the Hub's is read through its model), of another recipe
    ours = json.loads((staged / "manifest.json").read_text())
    old = json.dumps({**ours, "name": "older", "recipe_fingerprint": "0" * 16}).encode()
    in_process.create("alice/again", files={"manifest.json": old, "data/train-00004-of-00005.parquet": b"x",
                                             "README.md": b"---\n{}\n---\n", "LICENSE": b"the owner's"})
    with pytest.raises(CurateError, match="holds a run of another recipe"):
        hub_module.check(_recipe(corpus, "alice/again"))
    result = hub_module.publish(staged, _recipe(corpus, "alice/again", split="validation", config_name="cleaned"),
                                overwrite=True)
    assert result["deleted"] == 1
    n = len(list((staged / "data").glob("*.parquet")))
    assert sorted(in_process.files("alice/again")) == [".gitattributes", "LICENSE", "README.md",
                                                       *_shards("validation", n), "manifest.json"]
    # what was committed, as a local snapshot: datasets reads its config and split from the card
    from datasets import load_dataset

    snapshot = in_process.snapshot("alice/again", tmp_path / "snapshot")
    loaded = load_dataset(str(snapshot), "cleaned", cache_dir=str(tmp_path / "hf"))
    assert list(loaded) == ["validation"]
    assert len(loaded["validation"]) == json.loads((staged / "manifest.json").read_text())["rows_out"]


def test_a_branch_and_a_pull_request(corpus, staged, in_process):
    from curate.io import hub as hub_module

    in_process.create("alice/branches")
    hub_module.publish(staged, _recipe(corpus, "alice/branches@curated"))
    assert "manifest.json" in in_process.files("alice/branches", "curated")
    assert "manifest.json" not in in_process.files("alice/branches", "main")
    result = hub_module.publish(staged, _recipe(corpus, "alice/branches", create_pr="true"))
    assert "/discussions/1" in result["url"]
    assert "manifest.json" in in_process.files("alice/branches", "refs/pr/1")
    assert "manifest.json" not in in_process.files("alice/branches", "main")


def test_output_paths_and_settings_are_checked_with_the_recipe(corpus):
    from curate.errors import RecipeError
    from curate.recipe import load

    for path, said in (("hf://org/name", "dataset repositories only"), ("hf://datasets/org", "hf://datasets/ORG/NAME"),
                       ("hf://datasets/org/name/sub/dir", "no path inside it")):
        with pytest.raises(RecipeError, match=said):
            load(corpus / "recipe.yaml", output_path=path)
    with pytest.raises(RecipeError, match="format jsonl does not apply"):
        load(corpus / "recipe.yaml", output_path="hf://datasets/org/name", overrides=["output.format=jsonl"])
    with pytest.raises(RecipeError, match="output.hub applies"):
        load(corpus / "recipe.yaml", overrides=["output.hub.split=test"])
    r = load(corpus / "recipe.yaml", output_path="hf://datasets/org/name@dev", overrides=["output.hub.split=test"])
    from curate.io.hub import target_of

    assert (target_of(r.output).repo_id, target_of(r.output).revision, r.output.hub.split) == ("org/name", "dev", "test")
    assert load(corpus / "recipe.yaml", output_path="hf://datasets/org/name@dev").fingerprint() == r.fingerprint()


def test_endpoint_and_token_from_storage_options_and_a_private_repository(corpus, staged, in_process, monkeypatch):
    from curate.io import hub as hub_module

    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.delenv("HF_ENDPOINT")
    monkeypatch.setenv("MY_HUB_TOKEN", TOKEN)
    from curate.recipe import load

    recipe = load(corpus / "recipe.yaml", output_path="hf://datasets/alice/private",
                  overrides=["output.hub.private=true", "output.storage_options.token=${MY_HUB_TOKEN}",
                             f"output.storage_options.endpoint={in_process.endpoint}"])
    result = hub_module.publish(staged, recipe)
    assert result["url"].startswith(in_process.endpoint)
    assert in_process.repos["alice/private"]["private"] is True
    manifest = in_process.files("alice/private")["manifest.json"]
    assert TOKEN.encode() not in manifest and all(TOKEN.encode() not in b for b in in_process.files("alice/private").values())
    assert "${MY_HUB_TOKEN}" in json.dumps(recipe.display)
    from curate.errors import RecipeError

    with pytest.raises(RecipeError, match=r"takes endpoint and token \(\$\{VAR\}\), not key"):
        load(corpus / "recipe.yaml", output_path="hf://datasets/alice/private", overrides=["output.storage_options.key=x"])
