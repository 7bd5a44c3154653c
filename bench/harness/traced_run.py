"""Run the curate CLI under tracemalloc; write where its traced memory was at the traced peak.

    python bench/harness/traced_run.py OUT.json run recipe.yaml ...

A thread checks the traced total every SAMPLE_S seconds and, when it is a new high, snapshots the
allocation sites; at exit OUT.json holds the peak (MB) and the largest sites of that snapshot,
each allocation counted at its innermost line of curate's own code (the structure it belongs to). Traced: Python objects and numpy arrays (numpy reports its buffers to
tracemalloc); not traced: what Arrow, duckdb or faiss allocate natively.
"""

from __future__ import annotations

import json
import sys
import threading
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SAMPLE_S = 0.5
TOP = 8


FRAMES = 30
OURS = ("/curate/", "/operators/", "/lake/")


def site(traceback: tracemalloc.Traceback) -> str:
    """The allocation's innermost frame in curate's own code (which structure it is), else its innermost."""
    frames = list(traceback)[::-1]  # most recent first
    frame = next((f for f in frames if any(part in f.filename for part in OURS)), frames[0])
    return f"{Path(frame.filename).name}:{frame.lineno}"


def main() -> None:
    out, argv = Path(sys.argv[1]), sys.argv[2:]
    tracemalloc.start(FRAMES)
    best = {"current": 0, "top": []}
    done = threading.Event()

    def sample():
        while not done.wait(SAMPLE_S):
            current, _ = tracemalloc.get_traced_memory()
            if current > best["current"] * 1.05:  # a snapshot costs; take one only on a clear new high
                # Not the modules' own code and constants (imports): the data structures.
                stats = tracemalloc.take_snapshot().filter_traces(
                    [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen *>"),
                     tracemalloc.Filter(False, "<unknown>")]).statistics("traceback")
                sizes: dict[str, int] = {}
                for s in stats:
                    sizes[site(s.traceback)] = sizes.get(site(s.traceback), 0) + s.size
                best["current"] = current
                best["top"] = [{"site": name, "mb": size / 1e6}
                               for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:TOP]]

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    from curate.cli import main as cli

    sys.argv = ["curate", *argv]
    try:
        cli()
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    finally:
        done.set()
        thread.join()
        _, peak = tracemalloc.get_traced_memory()
        out.write_text(json.dumps({"peak_mb": peak / 1e6, "top": best["top"]}))
    sys.exit(code)


if __name__ == "__main__":
    main()
