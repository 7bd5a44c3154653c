"""A stand-in for the Hugging Face Hub on loopback, for tests only: no real Hub can be reached from
where the tests run, so this fake answers the routes huggingface_hub calls, at HF_ENDPOINT.

- `serve(root, repo)`: a read-only dataset repository whose files are a directory (the routes
  HfFileSystem uses to list it and read its files by range), for hf:// inputs.
- `StandInHub`: a stateful Hub for publishing: tokens (whoami-v2, with a role), repositories
  created (api/repos/create, with their first commit holding .gitattributes), branches,
  validate-yaml, preupload (upload modes: Parquet and large files LFS), the Git LFS batch API
  with its upload (PUT) and verify routes (an object the Hub holds gets no upload action), and
  the NDJSON commit route, applied whole or not at all (parentCommit checked, create_pr as
  refs/pr/N); repo_info, tree, paths-info and resolve read any branch. Faults are queued per
  route (`fail(route, status, ...)`: a 429 says Retry-After: 0). It is a fake: behaviour it does
  not model (Xet storage, multipart LFS, rate-limit headers beyond Retry-After, gating) is not
  tested through it.
"""

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

SHA = "a" * 40  # the one revision


def serve(root: Path, repo: str) -> ThreadingHTTPServer:
    """The dataset `repo` (ORG/NAME) at revision main, its files those under `root`; the running
    server (its endpoint: http://127.0.0.1:PORT). Files are read with Range, as the Hub's are."""

    def entry(p: Path) -> dict:
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            return {"type": "directory", "oid": hashlib.sha1(rel.encode()).hexdigest(), "path": rel}
        data = p.read_bytes()
        return {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": rel}

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body: bytes, headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def json(self, obj):
            self.reply(200, json.dumps(obj).encode(), [("Content-Type", "application/json")])

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urlparse(self.path)
            path, query = unquote(url.path), parse_qs(url.query)
            api = f"/api/datasets/{repo}"
            if path in (api, f"{api}/revision/main", f"{api}/revision/{SHA}"):
                return self.json({"id": repo, "sha": SHA, "private": False, "siblings": []})
            m = re.fullmatch(rf"{api}/tree/[^/]+/?(.*)", path)
            if m:
                d = root / m.group(1)
                if not d.is_dir():
                    return self.reply(404, b'{"error": "not found"}', [("X-Error-Code", "EntryNotFound")])
                items = sorted(d.rglob("*") if query.get("recursive") == ["true"] else d.iterdir())
                return self.json([entry(p) for p in items])
            m = re.fullmatch(rf"/datasets/{repo}/resolve/[^/]+/(.*)", path)
            if m and (root / m.group(1)).is_file():
                data = (root / m.group(1)).read_bytes()
                rng = self.headers.get("range") or self.headers.get("Range")
                if rng:
                    a, _, b = rng.removeprefix("bytes=").partition("-")
                    a, b = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
                    return self.reply(206, data[a:b + 1], [("Content-Range", f"bytes {a}-{b}/{len(data)}"),
                                                           ("ETag", f'"{entry(root / m.group(1))["oid"]}"')])
                return self.reply(200, data, [("ETag", f'"{entry(root / m.group(1))["oid"]}"')])
            self.reply(404, b'{"error": "not found"}', [("X-Error-Code", "RepoNotFound")])
        def do_POST(self):
            url = urlparse(self.path)
            path = unquote(url.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            m = re.fullmatch(rf"/api/datasets/{repo}/paths-info/[^/]+", path)
            if m:
                form = parse_qs(body)
                paths = form.get("paths", [])
                if not paths and body.startswith("{"):
                    paths = json.loads(body).get("paths", [])
                return self.json([entry(root / p) for p in paths if (root / p).exists()])
            self.reply(404, b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


class StandInHub:
    """A Hub on loopback holding repositories in memory (see the module's doc). `tokens`: token ->
    (user, role: write or read). `endpoint` once started; `stop()` ends it. `commits(repo)`:
    every commit of a repository's branch, oldest first; `files(repo, rev)`: its files' bytes."""

    def __init__(self, tokens: dict[str, tuple[str, str]]):
        self.tokens = tokens
        self.repos: dict[str, dict] = {}
        self.lfs: dict[str, bytes] = {}
        self.puts: dict[str, int] = {}  # LFS object -> times its content was uploaded
        self.faults: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, the route's name
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail(self, route: str, *statuses: int) -> None:
        """The next requests to `route` (whoami, repo_info, create, preupload, lfs_batch,
        lfs_upload, commit, ...) answered with these statuses, one each."""
        self.faults.setdefault(route, []).extend(statuses)

    # --- state ---

    def _commit(self, repo: dict, parent: str | None, files: dict, message: str) -> str:
        sha = hashlib.sha1(json.dumps([parent, message, sorted((k, v[1] if v[0] == "lfs" else git_sha1(v[1]))
                                                              for k, v in files.items())]).encode()
                           + str(len(repo["commits"])).encode()).hexdigest()
        repo["commits"][sha] = {"parent": parent, "files": files, "message": message}
        return sha

    def create(self, repo_id: str, private: bool = False, files: dict[str, bytes] | None = None) -> None:
        """A repository as the Hub makes it (one commit: .gitattributes), plus `files` in a second."""
        repo = {"private": private, "commits": {}, "branches": {}}
        sha = self._commit(repo, None, {".gitattributes": ("regular", GITATTRIBUTES)}, "initial commit")
        repo["branches"]["main"] = sha
        self.repos[repo_id] = repo
        if files:
            tree = dict(repo["commits"][sha]["files"], **{p: ("regular", b) for p, b in files.items()})
            repo["branches"]["main"] = self._commit(repo, sha, tree, "add files")

    def commits(self, repo_id: str, rev: str = "main") -> list[dict]:
        repo = self.repos[repo_id]
        sha, chain = repo["branches"][rev], []
        while sha:
            chain.append({"oid": sha, **repo["commits"][sha]})
            sha = repo["commits"][sha]["parent"]
        return chain[::-1]

    def files(self, repo_id: str, rev: str = "main") -> dict[str, bytes]:
        repo = self.repos[repo_id]
        tree = repo["commits"][repo["branches"].get(rev, rev)]["files"]
        return {p: (self.lfs[v[1]] if v[0] == "lfs" else v[1]) for p, v in tree.items()}

    def snapshot(self, repo_id: str, target: Path, rev: str = "main") -> Path:
        """The files at `rev` written under `target` (a local copy of what was committed)."""
        for path, data in self.files(repo_id, rev).items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_bytes(data)
        return target

    # --- the routes ---

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, code, body: bytes = b"", headers=(), error: str | None = None):
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                if error:
                    self.send_header("X-Error-Code", error)
                    self.send_header("X-Error-Message", error)
                if code == 429:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def json(self, obj, code=200, headers=()):
                self.reply(code, json.dumps(obj).encode(), [("Content-Type", "application/json"), *headers])

            def error(self, code, message, error=None):
                self.json({"error": message}, code) if not error else self.reply(
                    code, json.dumps({"error": message}).encode(), [("Content-Type", "application/json")], error)

            def body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    data = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def user(self):
                auth = self.headers.get("Authorization", "")
                token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else None
                return hub.tokens.get(token) if token else None

            def route(self, name: str) -> bool:
                """Record the request; answer a queued fault for `name` (True: answered)."""
                hub.requests.append((self.command, self.path, name))
                with hub.lock:
                    queued = hub.faults.get(name)
                    status = queued.pop(0) if queued else None
                if status is None:
                    return False
                self.body()
                self.error(status, f"stand-in fault {status} on {name}")
                return True

            def writer(self, repo_id: str | None = None) -> bool:
                """A token with write access (else answered 401/403: True)."""
                who = self.user()
                if who is None:
                    self.error(401, "Invalid credentials in Authorization header")
                    return True
                if who[1] != "write":
                    self.error(403, "You don't have the rights to write here")
                    return True
                return False

            def repo_of(self, repo_id: str):
                repo = hub.repos.get(repo_id)
                if repo is None or (repo["private"] and self.user() is None):
                    self.error(404, "Repository not found", "RepoNotFound")
                    return None
                return repo

            def revision(self, repo: dict, rev: str):
                rev = unquote(rev)
                sha = repo["branches"].get(rev) or (rev if rev in repo["commits"] else None)
                if sha is None:
                    self.error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
                return sha

            def entries(self, repo, sha, prefix: str, recursive: bool):
                tree = repo["commits"][sha]["files"]
                out, dirs = [], set()
                for path in sorted(tree):
                    if prefix and not path.startswith(prefix + "/"):
                        continue
                    rest = path[len(prefix) + 1:] if prefix else path
                    parts = rest.split("/")
                    for i in range(1, len(parts)):
                        d = "/".join(([prefix] if prefix else []) + parts[:i])
                        if d not in dirs and (recursive or i == 1):
                            dirs.add(d)
                            out.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d})
                    if len(parts) == 1 or recursive:
                        out.append(self.entry(tree, path))
                return out

            def entry(self, tree, path):
                kind, value = tree[path]
                if kind == "lfs":
                    data = hub.lfs[value]
                    return {"type": "file", "oid": git_sha1(value.encode()), "size": len(data), "path": path,
                            "lfs": {"oid": value, "size": len(data), "pointerSize": 134}}
                return {"type": "file", "oid": git_sha1(value), "size": len(value), "path": path}

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):
                url = urlparse(self.path)
                path, query = unquote(url.path), parse_qs(url.query)
                if path == "/api/whoami-v2":
                    if self.route("whoami"):
                        return
                    who = self.user()
                    if who is None:
                        return self.error(401, "Invalid credentials in Authorization header")
                    return self.json({"type": "user", "name": who[0], "auth": {"type": "access_token",
                                      "accessToken": {"displayName": "t", "role": who[1]}}})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/(.+))?", path)
                if m:
                    if self.route("repo_info"):
                        return
                    repo = self.repo_of(m.group(1))
                    sha = repo and self.revision(repo, m.group(2) or "main")
                    if not sha:
                        return
                    files = repo["commits"][sha]["files"]
                    return self.json({"id": m.group(1), "sha": sha, "private": repo["private"],
                                      "siblings": [{"rfilename": f} for f in sorted(files)],
                                      "lastModified": "2026-01-01T00:00:00.000Z", "cardData": {}, "tags": []})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)/?(.*)", path)
                if m:
                    if self.route("tree"):
                        return
                    repo = self.repo_of(m.group(1))
                    sha = repo and self.revision(repo, m.group(2))
                    if not sha:
                        return
                    return self.json(self.entries(repo, sha, m.group(3).strip("/"),
                                                  query.get("recursive") in (["true"], ["True"], ["1"])))
                m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    if self.route("resolve"):
                        return
                    repo = self.repo_of(m.group(1))
                    sha = repo and self.revision(repo, m.group(2))
                    if not sha:
                        return
                    tree = repo["commits"][sha]["files"]
                    if m.group(3) not in tree:
                        return self.error(404, "Entry not found", "EntryNotFound")
                    kind, value = tree[m.group(3)]
                    data = hub.lfs[value] if kind == "lfs" else value
                    etag = value if kind == "lfs" else git_sha1(value)
                    headers = [("ETag", f'"{etag}"'), ("X-Repo-Commit", sha), ("Accept-Ranges", "bytes")]
                    if kind == "lfs":
                        headers += [("X-Linked-Etag", f'"{etag}"'), ("X-Linked-Size", str(len(data)))]
                    rng = self.headers.get("Range")
                    if rng:
                        a, _, b = rng.removeprefix("bytes=").partition("-")
                        a, b = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
                        return self.reply(206, data[a:b + 1], [("Content-Range", f"bytes {a}-{b}/{len(data)}"),
                                                               *headers])
                    return self.reply(200, data, headers)
                self.error(404, "not found", "RepoNotFound")

            def do_PUT(self):
                url = urlparse(self.path)
                m = re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", url.path)
                if not m or self.route("lfs_upload"):
                    return None if m else self.error(404, "not found")
                data = self.body()
                if hashlib.sha256(data).hexdigest() != m.group(1):
                    return self.error(400, "content does not match its oid")
                with hub.lock:
                    hub.lfs[m.group(1)] = data
                    hub.puts[m.group(1)] = hub.puts.get(m.group(1), 0) + 1
                self.reply(200)

            def do_POST(self):
                url = urlparse(self.path)
                path, query = unquote(url.path), parse_qs(url.query)
                if path == "/api/repos/create":
                    if self.route("create") or self.writer():
                        return
                    payload = json.loads(self.body())
                    repo_id = f"{payload.get('organization') or hub.tokens_user(self)}/{payload['name']}"
                    with hub.lock:
                        if repo_id in hub.repos:
                            return self.error(409, "You already created this dataset repo")
                        hub.create(repo_id, private=payload.get("visibility") == "private" or bool(payload.get("private")))
                    return self.json({"url": f"{hub.endpoint}/datasets/{repo_id}", "name": repo_id})
                if path == "/api/validate-yaml":
                    payload = json.loads(self.body())
                    m = re.match(r"---\n(.*?)\n---\n", payload["content"], re.S)
                    try:
                        import yaml

                        meta = yaml.safe_load(m.group(1)) if m else {}
                    except yaml.YAMLError as e:
                        return self.json({"errors": [{"message": str(e)}], "warnings": []}, 400)
                    if not isinstance(meta, dict):
                        return self.json({"errors": [{"message": "metadata is not a mapping"}], "warnings": []}, 400)
                    return self.json({"errors": [], "warnings": []})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/branch/(.+)", path)
                if m:
                    if self.route("branch") or self.writer():
                        return
                    repo = self.repo_of(m.group(1))
                    if repo is None:
                        return
                    payload = json.loads(self.body() or b"{}")
                    with hub.lock:
                        if m.group(2) in repo["branches"]:
                            return self.error(409, "Branch already exists")
                        repo["branches"][m.group(2)] = repo["branches"][payload.get("startingPoint") or "main"]
                    return self.json({})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/paths-info/([^/]+)", path)
                if m:
                    repo = self.repo_of(m.group(1))
                    sha = repo and self.revision(repo, m.group(2))
                    if not sha:
                        return
                    body = self.body().decode()
                    paths = parse_qs(body).get("paths", []) or (json.loads(body).get("paths", [])
                                                                if body.startswith("{") else [])
                    tree = repo["commits"][sha]["files"]
                    return self.json([self.entry(tree, p) for p in paths if p in tree]
                                     + [e for p in paths if p not in tree
                                        for e in self.entries(repo, sha, "", True) if e["path"] == p])
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/(.+)", path)
                if m:
                    if self.route("preupload") or self.writer():
                        return
                    repo = self.repo_of(m.group(1))
                    if repo is None:
                        return
                    payload = json.loads(self.body())
                    sha = repo["branches"].get(unquote(m.group(2)))
                    tree = repo["commits"][sha]["files"] if sha else {}
                    files = []
                    for f in payload["files"]:
                        lfs = f["path"].endswith(".parquet") or f["size"] > 1_000_000
                        old = tree.get(f["path"])
                        oid = None if old is None else (old[1] if old[0] == "lfs" else git_sha1(old[1]))
                        files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular",
                                      "shouldIgnore": False, "oid": oid})
                    return self.json({"files": files, "commitOid": sha})
                m = re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
                if m:
                    if self.route("lfs_batch") or self.writer():
                        return
                    payload = json.loads(self.body())
                    objects = []
                    for o in payload["objects"]:
                        if o["oid"] in hub.lfs:  # held already: nothing to upload
                            objects.append({"oid": o["oid"], "size": o["size"]})
                        else:
                            objects.append({"oid": o["oid"], "size": o["size"], "actions": {
                                "upload": {"href": f"{hub.endpoint}/lfs-upload/{o['oid']}"},
                                "verify": {"href": f"{hub.endpoint}/lfs-verify"}}})
                    return self.json({"transfer": "basic", "objects": objects})
                if path == "/lfs-verify":
                    if self.route("lfs_verify"):
                        return
                    payload = json.loads(self.body())
                    return self.json({}) if payload["oid"] in hub.lfs else self.error(404, "object not found")
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/(.+)", path)
                if m:
                    if self.route("commit") or self.writer():
                        return
                    repo = self.repo_of(m.group(1))
                    if repo is None:
                        return
                    lines = [json.loads(line) for line in self.body().splitlines() if line.strip()]
                    return self.commit(repo, unquote(m.group(2)), lines, query.get("create_pr") == ["1"])
                self.error(404, "not found")

            def commit(self, repo, branch, lines, create_pr):
                header = next(line["value"] for line in lines if line["key"] == "header")
                with hub.lock:
                    head = repo["branches"].get(branch)
                    if head is None:
                        return self.error(404, f"Invalid rev id: {branch}", "RevisionNotFound")
                    if header.get("parentCommit") and header["parentCommit"] != head:
                        return self.error(412, "A commit has happened since. Please refresh and try again.")
                    tree = dict(repo["commits"][head]["files"])
                    for line in lines:
                        key, value = line["key"], line["value"]
                        if key == "file":
                            tree[value["path"]] = ("regular", base64.b64decode(value["content"]))
                        elif key == "lfsFile":
                            if value["oid"] not in hub.lfs:
                                return self.error(400, f"LFS object {value['oid']} of {value['path']} not uploaded")
                            tree[value["path"]] = ("lfs", value["oid"])
                        elif key == "deletedFile":
                            if value["path"] not in tree:
                                return self.error(404, "A file with this name doesn't exist", "EntryNotFound")
                            del tree[value["path"]]
                        elif key == "deletedFolder":
                            for p in [p for p in tree if p.startswith(value["path"].rstrip("/") + "/")]:
                                del tree[p]
                    sha = hub._commit(repo, head, tree, header["summary"])
                    pr = None
                    if create_pr:
                        pr = f"refs/pr/{sum(b.startswith('refs/pr/') for b in repo['branches']) + 1}"
                        repo["branches"][pr] = sha
                    else:
                        repo["branches"][branch] = sha
                repo_id = next(k for k, v in hub.repos.items() if v is repo)
                self.json({"commitUrl": f"{hub.endpoint}/datasets/{repo_id}/commit/{sha}", "commitOid": sha,
                           "pullRequestUrl": f"{hub.endpoint}/datasets/{repo_id}/discussions/{pr.rsplit('/', 1)[1]}"
                           if pr else None})

        return Handler

    def tokens_user(self, handler) -> str:
        return handler.user()[0]
