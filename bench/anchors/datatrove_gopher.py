"""Runs datatrove's GopherQualityFilter + GopherRepetitionFilter over a JSONL shard of documents.

Runs inside bench/.venvs/gopher-anchor (datatrove's own environment); sections/gopher.py starts it.
Writes {"seconds": ..., "cpu": ..., "docs": ..., "kept": [...], "reasons": [...]} to the output path.

datatrove's English word tokenizer is spaCy's blank("en") tokenizer, which needs no downloaded
model, so the filters run with their defaults.
"""

import json
import sys
import time

from datatrove.data import Document
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter


def main(docs_path: str, out_path: str) -> None:
    with open(docs_path) as f:
        texts = [json.loads(line)["text"] for line in f]
    quality, repetition = GopherQualityFilter(), GopherRepetitionFilter()
    # Warm up (spaCy's tokenizer loads on first use); not timed.
    list(repetition.run(quality.run(Document(text=t, id=str(i)) for i, t in enumerate(texts[:5]))))

    started, cpu_started = time.perf_counter(), time.process_time()
    docs = (Document(text=t, id=str(i)) for i, t in enumerate(texts))
    kept_ids = {doc.id for doc in repetition.run(quality.run(docs))}
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started

    reasons = []  # the first failing rule, for the comparison (not timed)
    for text in texts:
        doc = Document(text=text, id="")
        result = quality.filter(doc)
        if result is True:
            result = repetition.filter(doc)
        reasons.append(None if result is True else result[1])
    kept = [str(i) in kept_ids for i in range(len(texts))]
    with open(out_path, "w") as f:
        json.dump({"seconds": seconds, "cpu": cpu, "docs": len(texts), "kept": kept, "reasons": reasons}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
