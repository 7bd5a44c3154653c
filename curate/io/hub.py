"""Publishing a run to the Hugging Face Hub: `output.path: hf://datasets/ORG/NAME[@REVISION]`.

The run itself is a local run, made in a staging directory of its own (`staging_dir`: keyed by
the URI under $CURATE_CACHE_DIR/runs/, as a store output's work is), with its manifest written
last as always. Publishing is a step after that: the shards under the Hub's Parquet names
(`data/<split>-NNNNN-of-MMMMM.parquet`, so the dataset viewer and `datasets.load_dataset`
find their config and split in the card's `configs`), trace/ if asked (`output.hub.trace`),
manifest.json and the dataset card (README.md, curate/card.py) go up in ONE commit
(`HfApi.create_commit`), which the Hub applies whole or not at all: a reader never sees half a
dataset. The large files are uploaded to the Hub's storage first (`preupload_lfs_files`); an
upload interrupted there leaves no commit, and publishing again (`curate run --resume`, which
finds the run finished in its staging directory) makes that one commit from the same files,
their content not uploaded twice (the Hub answers that it holds it). The manifest is the
commit's marker: a branch whose manifest.json is this run's is published already.

Before any work or upload (`check`, called before the run starts, and again at publishing):
a token (HF_TOKEN, else the `hf auth login` file) the Hub accepts with write access, and a
repository (at the branch) that is new, empty (.gitattributes alone) or holds a run curate
published (replaced in the same commit, its stale files deleted; another recipe's only with
--overwrite). Anything else is a CurateError (exit 2). Rate limits and unavailability (429,
503, ...) are retried a counted number of times, waiting what the Hub says (Retry-After).

The token is passed to huggingface_hub only; it is never written to a file, a message or a log
(messages are scrubbed of it, should the Hub's text ever hold it). The calls to the Hub, their
retries and errors: hub_calls.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote

from curate.errors import CurateError
from curate.io.hub_calls import Calls, default_endpoint, hub_api, hub_token, scrub
from curate.manifest import Manifest, read

PREFIX = "hf://"
_URI = re.compile(r"hf://datasets/(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<rev>[^/@]+))?/?")
FORM = "hf://datasets/ORG/NAME, or hf://datasets/ORG/NAME@REVISION"
KEEP = (".gitattributes",)  # what a new repository holds: not "other content"
MAX_FILES = 25_000  # LFS files one commit may hold (create_commit's documented limit)


class HubPathError(CurateError, ValueError):
    """An hf:// output path that is not a dataset repository (ValueError too: pydantic reports it
    at output.path)."""


@dataclass(frozen=True)
class Target:
    """Where a run is published: `repo_id` (ORG/NAME) at `revision` (None: main)."""

    uri: str
    repo_id: str
    revision: str | None
    endpoint: str = ""  # the Hub's (output.storage_options.endpoint, else HF_ENDPOINT, else huggingface.co)

    @property
    def url(self) -> str:
        return f"{self.endpoint or default_endpoint()}/datasets/{self.repo_id}" + (
            f"/tree/{self.revision}" if self.revision else ""
        )


def is_hub(path) -> bool:
    """Whether an output path is the Hugging Face Hub (hf://...)."""
    return isinstance(path, str) and path.startswith(PREFIX)


def parse(path: str) -> Target:
    """The repository and revision of `path` (hf://datasets/ORG/NAME[@REVISION])."""
    m = _URI.fullmatch(path)
    if m is None:
        extra = ""
        if path.startswith(PREFIX) and not path.startswith(f"{PREFIX}datasets/"):
            extra = " (curate publishes dataset repositories only)"
        elif path.count("/") > 4 and "@" not in path:
            extra = " (the run is the repository's root: no path inside it)"
        raise HubPathError(f"{path} is not a Hub dataset repository{extra}: write {FORM}")
    return Target(path, m.group("repo"), unquote(m.group("rev")) if m.group("rev") else None)


def target_of(output) -> Target:
    """The target of an OutputSpec with an hf:// path: the revision from output.hub or the URI,
    the endpoint from output.storage_options (`endpoint`, as hf:// inputs take it) or HF_ENDPOINT."""
    target = parse(output.path)
    revision = output.hub.revision if output.hub is not None and output.hub.revision else None
    if revision and target.revision and revision != target.revision:
        raise CurateError(f"output.path names revision {target.revision} and output.hub.revision {revision}: give one")
    unknown = sorted(set(output.storage_options) - {"endpoint", "token"})
    if unknown:
        raise CurateError(
            f"output.storage_options of an hf:// output takes endpoint and token, not {', '.join(unknown)}"
        )
    endpoint = str(output.storage_options.get("endpoint") or default_endpoint()).rstrip("/")
    return Target(target.uri, target.repo_id, revision or target.revision, endpoint)


def staging_dir(path: str) -> str:
    """The local run directory of a run published to `path`: the same for every run into it on
    this machine (so --resume finds it), another for every other URI."""
    from curate.engine.rundir.layout import work_directory

    return work_directory(f"hub:{path}")


def hub_paths(run_dir: Path, output) -> list[tuple[Path, str]]:
    """(local file, its path in the repository) of every file published from `run_dir`: the
    shards under the Hub's names, trace/ if asked, the manifest last (the card is added apart)."""
    spec = output.hub
    shards = sorted((run_dir / "data").glob("*.parquet"))
    pairs = [(s, shard_name(spec.split, i, len(shards))) for i, s in enumerate(shards)]
    if spec.trace and (run_dir / "trace").is_dir():
        pairs += [(f, f.relative_to(run_dir).as_posix()) for f in sorted((run_dir / "trace").rglob("*")) if f.is_file()]
    pairs.append((run_dir / "manifest.json", "manifest.json"))
    return pairs


def shard_name(split: str, index: int, count: int) -> str:
    """A shard's path in the repository: `datasets`' own push_to_hub layout."""
    return f"data/{split}-{index:05d}-of-{count:05d}.parquet"


# --- what the repository holds --------------------------------------------------------------------


@dataclass
class Remote:
    """The repository at the branch as found: whether it exists, the branch, its files, its head
    and the manifest curate published there (bytes), if any."""

    repo: bool
    branch: bool
    files: list[str]
    head: str | None
    manifest: bytes | None


def _remote(calls: Calls, api, branch: str) -> Remote:
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    target = calls.target
    try:
        info = calls(
            "reading the repository",
            api.repo_info,
            target.repo_id,
            repo_type="dataset",
            revision=branch,
            token=calls.token,
            passthrough=(RepositoryNotFoundError, RevisionNotFoundError),
        )
    except RepositoryNotFoundError:
        return Remote(False, False, [], None, None)
    except RevisionNotFoundError:
        return Remote(True, False, [], None, None)
    files = sorted(s.rfilename for s in (info.siblings or []))
    manifest = None
    if "manifest.json" in files:
        manifest = calls(
            "reading its manifest.json", _read, api, target.repo_id, "manifest.json", info.sha, calls.token
        )
    return Remote(True, True, files, info.sha, manifest)


def _read(api, repo_id: str, path: str, revision: str, token: str) -> bytes:
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = hf_hub_url(repo_id, path, repo_type="dataset", revision=revision, endpoint=api.endpoint)
    response = get_session().get(url, headers=build_hf_headers(token=token), follow_redirects=True)
    hf_raise_for_status(response)
    return response.content


def _curate_manifest(data: bytes | None) -> Manifest | None:
    """The repository's manifest.json, where it is a curate run's that this curate reads, else None."""
    try:
        return read(data, "the repository's manifest.json") if data else None
    except CurateError:
        return None


def _refusal(target: Target, branch: str, remote: Remote, fingerprint: str, overwrite: bool) -> str | None:
    """Why the repository cannot take this run, or None."""
    ours = _curate_manifest(remote.manifest)
    if ours is not None:
        if ours.recipe_fingerprint != fingerprint and not overwrite:
            return (
                f"{target.repo_id} ({branch}) holds a run of another recipe ({ours.name}, fingerprint "
                f"{ours.recipe_fingerprint}); --overwrite replaces it"
            )
        return None
    other = [f for f in remote.files if f not in KEEP]
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        return (
            f"{target.repo_id} ({branch}) holds files curate did not publish ({shown}); publish to a new "
            f"repository, or to a new branch (hf://datasets/{target.repo_id}@BRANCH)"
        )
    return None


@dataclass
class Checked:
    """What `check` found: the calls (their token), the branch, the repository as it was."""

    calls: Calls
    api: Any  # huggingface_hub.HfApi (the hub extra)
    branch: str
    remote: Remote
    user: str


def check(recipe, overwrite: bool = False, status: Callable[[str], None] = lambda m: None) -> Checked:
    """Before a run publishing to the Hub starts (and again at publishing): a token the Hub takes,
    with write access, and a repository that can take the run. A CurateError (exit 2) else."""
    target = target_of(recipe.output)
    api = hub_api(target)
    token = hub_token(recipe.output)
    calls = Calls(target, token, status)
    me = calls("checking the token", api.whoami, token=token)
    role = ((me.get("auth") or {}).get("accessToken") or {}).get("role")
    if role == "read":
        raise CurateError(f"publishing to {target.uri}: the token is read-only: use a token with write access")
    branch = target.revision or "main"
    remote = _remote(calls, api, branch)
    if target.revision and not remote.branch and remote.repo and recipe.output.hub.create_pr:
        raise CurateError(
            f"publishing to {target.uri}: create_pr opens a pull request against an existing branch; "
            f"{branch} does not exist"
        )
    why = _refusal(target, branch, remote, recipe.fingerprint(), overwrite)
    if why:
        raise CurateError(f"publishing to {target.uri}: {why}")
    return Checked(calls, api, branch, remote, me.get("name", ""))


def publish(run_dir: Path, recipe, overwrite: bool = False, status: Callable[[str], None] = lambda m: None) -> dict:
    """The finished run in `run_dir` published to the Hub in one commit (see the module's doc);
    what was done: {repo, revision, url, commit, files, retries, already}."""
    from curate import card as card_module
    from curate.engine.failpoints import failpoint

    output = recipe.output
    spec = output.hub
    checked = check(recipe, overwrite, status)  # huggingface_hub is installed, once this has passed
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # the run's own status lines say what is uploaded; no bars in batch logs
    calls, api, branch, remote = checked.calls, checked.api, checked.branch, checked.remote
    target = calls.target
    manifest = (run_dir / "manifest.json").read_bytes()
    result = {"repo": target.repo_id, "revision": branch, "url": target.url, "commit": None, "already": False}
    if remote.manifest == manifest and not spec.create_pr:
        status(f"{target.uri} holds this run already: nothing to publish")
        return {**result, "commit": remote.head, "already": True, "files": len(remote.files), "retries": 0}

    settings = spec.model_dump()
    # the run directory's own card: load_dataset(RUN_DIR) reads data/ alone
    card_module.write_card(run_dir, settings=settings)
    pairs = hub_paths(run_dir, output)
    paths = [p for _, p in pairs] + ["README.md"]
    text = card_module.card_text(run_dir, hub_paths=paths, repo_id=target.repo_id, settings=settings)
    card_module.check(text, paths)
    card_bytes = scrub(text, calls.token).encode()
    # Our earlier run's data and trace files that this one does not replace: deleted in the same
    # commit (a file someone added beside them, a LICENSE say, stays)
    stale = (
        [f for f in remote.files if f.startswith(("data/", "trace/")) and f not in paths]
        if _curate_manifest(remote.manifest)
        else []
    )
    adds = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(f)) for f, p in pairs[:-1]]
    adds += [
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_bytes),
        CommitOperationAdd(path_in_repo="manifest.json", path_or_fileobj=manifest),
    ]
    operations = adds + [CommitOperationDelete(path_in_repo=p) for p in stale]
    if len(adds) > MAX_FILES:  # before anything is made or uploaded
        raise CurateError(
            f"publishing to {target.uri}: {len(adds)} files are more than one commit takes "
            f"({MAX_FILES}); "
            f"write fewer, larger shards (output.shard_mb, output.merge_shards: true) and --overwrite"
        )

    if not remote.repo:
        calls(
            f"creating {target.repo_id}",
            api.create_repo,
            target.repo_id,
            repo_type="dataset",
            private=spec.private,
            exist_ok=True,
            token=calls.token,
        )
        status(f"created {target.endpoint}/datasets/{target.repo_id}" + (" (private)" if spec.private else ""))
    if branch != "main" and not remote.branch:
        calls(
            f"creating the branch {branch}",
            api.create_branch,
            target.repo_id,
            branch=branch,
            repo_type="dataset",
            exist_ok=True,
            token=calls.token,
        )
    size = sum(f.stat().st_size for f, _ in pairs)
    status(f"uploading {len(adds)} files ({size / 1e6:.1f} MB) to {target.repo_id}")
    calls(
        "uploading the files",
        api.preupload_lfs_files,
        target.repo_id,
        additions=adds,
        repo_type="dataset",
        revision=branch,
        create_pr=spec.create_pr,
        token=calls.token,
    )
    failpoint("hub-uploaded")
    rows = read(manifest, str(run_dir / "manifest.json")).rows_out
    message = spec.commit_message or f"curate: {recipe.name}, {rows} rows"
    description = (
        f"Published by curate: recipe {recipe.name} (fingerprint {recipe.fingerprint()}), "
        f"{len(pairs) - 1} data and trace files, the dataset card and manifest.json in one commit."
    )
    info = calls(
        "committing",
        api.create_commit,
        target.repo_id,
        operations,
        commit_message=message,
        commit_description=description,
        repo_type="dataset",
        revision=branch,
        create_pr=spec.create_pr,
        parent_commit=None if spec.create_pr else remote.head,
        token=calls.token,
    )
    url = info.pr_url if spec.create_pr and info.pr_url else info.commit_url
    status(f"published {target.uri}: {url}")
    return {
        **result,
        "commit": info.oid,
        "url": url,
        "files": len(adds),
        "deleted": len(stale),
        "retries": sum(calls.retries.values()),
        "retry_reasons": dict(sorted(calls.retries.items())),
    }
