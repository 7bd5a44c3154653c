"""Runs datatrove's C4QualityFilter or FineWebQualityFilter (published defaults) over a JSONL shard.

Runs inside bench/.venvs/datatrove; sections/webfilters.py starts it. Writes {"seconds", "cpu", "docs",
"kept": [...], "reasons": [...]} to the output path, as anchors/datatrove_gopher.py does.
"""

import json
import sys
import time

from datatrove.data import Document
from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter

FILTERS = {"c4": C4QualityFilter, "fineweb": FineWebQualityFilter}


def main(which: str, docs_path: str, out_path: str) -> None:
    with open(docs_path) as f:
        texts = [json.loads(line)["text"] for line in f]
    flt = FILTERS[which]()
    list(flt.run(Document(text=t, id=str(i)) for i, t in enumerate(texts[:5])))  # warm up spaCy; not timed

    started, cpu_started = time.perf_counter(), time.process_time()
    kept_ids = {doc.id for doc in flt.run(Document(text=t, id=str(i)) for i, t in enumerate(texts))}
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started

    reasons = []  # the failing rule, for the comparison (not timed)
    for text in texts:
        result = flt.filter(Document(text=text, id=""))
        reasons.append(None if result is True else result[1] if isinstance(result, tuple) else "dropped")
    kept = [str(i) in kept_ids for i in range(len(texts))]
    with open(out_path, "w") as f:
        json.dump({"seconds": seconds, "cpu": cpu, "docs": len(texts), "kept": kept, "reasons": reasons}, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
