"""datatrove's equivalent of curate's tokenize + megatron output; run with bench/.venvs/datatrove/bin/python.

usage: anchors/datatrove_tokenize.py INPUT_DIR WORK_DIR WORKERS TOKENIZER_JSON EOS_TOKEN

JsonlReader -> DocumentTokenizer (EOS after every document, no shuffling: curate keeps the input
order) on LocalPipelineExecutor, WORKERS tasks on WORKERS processes. DocumentTokenizer writes its
own token files (.ds, ids back to back, uint16 below 65,536 ids) with their .ds.index. Prints one
JSON line: the tokens written.
"""

import json
import shutil
import sys
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.tokens import DocumentTokenizer

if __name__ == "__main__":
    inp, work, workers, tokenizer, eos = sys.argv[1:6]
    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    LocalPipelineExecutor(
        pipeline=[JsonlReader(inp, glob_pattern="part-*.jsonl.gz"),
                  DocumentTokenizer(str(work / "out"), tokenizer_name_or_path=tokenizer, eos_token=eos,
                                    shuffle_documents=False)],
        tasks=int(workers), workers=int(workers), logging_dir=str(work / "logs")).run()
    tokens = sum(p.stat().st_size for p in (work / "out").rglob("*.ds")) // 2  # uint16 ids: a 30,522 vocabulary
    print(json.dumps({"tokens": tokens}))
