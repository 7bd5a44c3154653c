"""The file operations of layout.Files on an object store (any fsspec filesystem: s3://, gs://,
memory://, file://), for a run whose `output.path` is a URI.

A store has no rename, but a PUT is whole or absent (an unfinished multipart upload is never an
object), so a file is written straight under its final name; the run's manifest, written last,
is what says the files beside it are complete (publish.py).
"""

from __future__ import annotations

import os
import posixpath
from contextlib import contextmanager

from curate.errors import CurateError
from curate.io import retries
from curate.io.store import is_uri, store_exceptions, upload_options

# Files uploaded at once. s3fs sends a file under two parts (2 x 50 MB) in one PUT read whole into
# memory, and by default puts 128 files at once: every data shard of a run in the run process's
# memory together (at 1M documents its largest process was 3.3 GB to S3 vs 2.3 GB to local disk,
# bench/RESULTS.md "Inputs on S3"). Eight keep a store busy.
UPLOAD_FILES_AT_ONCE = 8


class StoreFiles:
    """Files' operations on the fsspec filesystem of a URI; paths are full URIs."""

    def __init__(self, uri: str, options: dict | None = None):
        from curate.io.store import filesystem

        try:  # S3's requests retried (throttling, resets) by the policy of output.storage_options, counted apart
            self.fs, _ = filesystem(uri, options, side="output")
            self.policy = retries.Policy.of(options, "output.storage_options")
        except CurateError as e:
            raise CurateError(f"output.path: {e}") from None
        protocols = self.fs.protocol if isinstance(self.fs.protocol, (tuple, list)) else (self.fs.protocol,)
        # Only a filesystem with directories needs them made (s3fs would create a missing bucket)
        self.has_directories = "file" in protocols

    def _parent(self, path: str) -> None:
        if self.has_directories:
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)

    def _info(self, path: str) -> dict | None:
        try:
            return self.fs.info(path)
        except FileNotFoundError:
            return None

    def exists(self, path: str) -> bool:
        return self._info(path) is not None

    def is_file(self, path: str) -> bool:
        info = self._info(path)
        return info is not None and info["type"] == "file"

    def is_dir(self, path: str) -> bool:
        info = self._info(path)
        return info is not None and info["type"] == "directory"

    def size(self, path: str) -> int:
        return self.fs.size(path)

    def read_bytes(self, path: str) -> bytes:
        """The object whole; read again when its body breaks off (a request the store failed is
        retried by the client's hook; a body cut off mid-read is past it)."""
        return retries.call(self.policy, lambda: self.fs.cat_file(path), retries.count_output)

    def write_bytes(self, path: str, data: bytes) -> None:
        """One PUT: the object appears whole or not at all."""
        self._parent(path)
        self.fs.pipe_file(path, data)

    def create(self, path: str, data: bytes) -> bool:
        """`data` at `path` only if nothing is there (S3's If-None-Match: *, an exclusive create
        elsewhere): whether it was written."""
        self._parent(path)
        try:
            with self.fs.open(path, "xb") as f:
                f.write(data)
        except FileExistsError:
            return False
        except OSError as e:  # s3fs reports a failed precondition as a plain OSError
            if "PreconditionFailed" in str(e) or "412" in str(e):
                return False
            raise
        return True

    def names(self, directory: str, suffix: str = "") -> list[str]:
        try:
            listed = self.fs.ls(directory, detail=False)
        except FileNotFoundError:
            return []
        names = {posixpath.basename(p.rstrip("/")) for p in listed}
        names.discard(posixpath.basename(directory.rstrip("/")))  # some stores list the prefix itself
        return sorted(n for n in names if n.endswith(suffix))

    def remove(self, path: str) -> None:
        """An object, or every object under a prefix, if there."""
        if self.exists(path):
            self.fs.rm(path, recursive=True)

    def upload(self, pairs: list[tuple[str, str]]) -> None:
        """Local files to their URIs, concurrently where the filesystem can (s3fs: multipart for
        large ones)."""
        if not pairs:
            return
        from fsspec.asyn import AsyncFileSystem

        for _, remote in pairs:
            self._parent(remote)
        at_once = {"batch_size": UPLOAD_FILES_AT_ONCE} if isinstance(self.fs, AsyncFileSystem) else {}
        bounded = upload_options(self.fs, [os.path.getsize(local) for local, _ in pairs])
        self.fs.put([local for local, _ in pairs], [remote for _, remote in pairs], **at_once, **bounded)

    def copy(self, pairs: list[tuple[str, str]]) -> None:
        """Objects of this filesystem to other URIs of it, copied by the store itself (S3's
        CopyObject: no byte passes through this machine; each appears only whole)."""
        if not pairs:
            return
        for _, target in pairs:
            self._parent(target)
        self.fs.copy([source for source, _ in pairs], [target for _, target in pairs])

    def refresh(self) -> None:
        """Forget listings cached in this process: another process writes here too."""
        self.fs.invalidate_cache()


@contextmanager
def output_errors(root: str):
    """A store that refuses or cannot be reached, as a CurateError naming the output `root` (a
    local directory's errors pass as they are: a full disk has its own message)."""
    if not is_uri(root):
        yield
        return
    try:
        yield
    except CurateError:
        raise
    except PermissionError as e:
        raise CurateError(
            f"output {root}: access refused ({e}); check the credentials (environment "
            f"variables, profile) or output.storage_options"
        ) from None
    except FileNotFoundError as e:
        raise CurateError(f"output {root}: not found ({e}); does the bucket exist?") from None
    except (ValueError,) + store_exceptions() as e:  # store_exceptions: botocore's missing credentials too
        raise CurateError(f"output {root}: cannot write there: {type(e).__name__}: {e}") from None
