"""Runs datatrove's NGramsDecontIndexer (its compute_hashes, the index it writes) and
NGramsDecontFilter over the same documents and benchmark as sections/decon.py.

Runs inside bench/.venvs/datatrove; sections/decon.py starts it. The indexer's run() reads its tasks from
lighteval's table (and the class requires lighteval), so the index is made by the indexer's own
compute_hashes(label, query) on each benchmark item, saved the way run() saves it. Query n-grams are on
(find_query_ngrams), so the index holds every n-gram of the item, as curate's does. Writes {"index_cpu",
"cpu", "seconds", "docs", "flagged": [ids]} to the output path.
"""

import json
import sys
import tempfile
import time

import numpy as np
from datatrove.data import Document
from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
from datatrove.utils.hashing import create_hash_func
from datatrove.utils.typeshelper import Languages
from datatrove.utils.word_tokenizers import load_word_tokenizer


def main(docs_path: str, bench_path: str, n: str, out_path: str) -> None:
    texts = [json.loads(line)["text"] for line in open(docs_path)]
    items = [json.loads(line) for line in open(bench_path)]
    config = NGramsDecontConfig(n_grams=int(n), find_query_ngrams=True, find_overlap_ngrams=True)
    with tempfile.TemporaryDirectory() as index_dir:
        cpu0 = time.process_time()
        # The class refuses to be made without lighteval (its run() reads lighteval's task table); its
        # compute_hashes needs only what __init__ sets, set here the same way.
        indexer = object.__new__(NGramsDecontIndexer)
        indexer.config = config
        indexer.tokenizer = load_word_tokenizer(Languages.english)
        indexer.hash_func = create_hash_func(config.hash_config)
        hashes = set()
        for item in items:
            hashes.update(indexer.compute_hashes(item["answer"], item["question"]))
        np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(f"{index_dir}/bench.index.hashes")
        index_cpu = time.process_time() - cpu0
        flt = NGramsDecontFilter(index_dir, config=config)
        list(flt.run(Document(text=t, id=str(i)) for i, t in enumerate(texts[:5])))  # loads the index, warms spaCy
        started, cpu0 = time.perf_counter(), time.process_time()
        kept = {doc.id for doc in flt.run(Document(text=t, id=str(i)) for i, t in enumerate(texts))}
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    flagged = [str(i) for i in range(len(texts)) if str(i) not in kept]
    json.dump({"index_cpu": index_cpu, "cpu": cpu, "seconds": seconds, "docs": len(texts), "flagged": flagged},
              open(out_path, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:5])
