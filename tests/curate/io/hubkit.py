"""A stand-in for the Hugging Face Hub on loopback: the few API routes huggingface_hub's HfFileSystem
uses to list a dataset repository and read its files by range (HF_ENDPOINT / storage_options endpoint)."""

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
