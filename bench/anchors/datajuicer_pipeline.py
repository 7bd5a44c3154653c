"""Data-Juicer's closest equivalent of curate's gopher_quality + exact_dedup; run with
bench/.venvs/datajuicer/bin/python.

usage: anchors/datajuicer_pipeline.py INPUT_DIR WORK_DIR NP

Writes a Data-Juicer config and runs its standard executor (`dj-process --config`) with np=NP:
words_num / special_characters / alphanumeric / stopwords / character_repetition / word_repetition
filters, then document_deduplicator (exact MD5 of the text). Data-Juicer has no mean-word-length
filter, so that Gopher rule has no counterpart. Offline settings: `tokenization: false` (whitespace
words, no sentencepiece model), and a local stopwords.json holding Gopher's 8 stop words (its
default list would be downloaded). Thresholds follow the Gopher rules where they have a counterpart,
else Data-Juicer's defaults. Prints one JSON line: rows kept.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]

PROCESS = [
    {"words_num_filter": {"lang": "en", "tokenization": False, "min_num": 50, "max_num": 100000}},
    {"special_characters_filter": {"min_ratio": 0.0, "max_ratio": 0.25}},
    {"alphanumeric_filter": {"tokenization": False, "min_ratio": 0.25}},
    {"stopwords_filter": {"lang": "en", "tokenization": False, "min_ratio": 0.05}},  # + stopwords_dir below
    {"character_repetition_filter": {"rep_len": 10, "min_ratio": 0.0, "max_ratio": 0.5}},
    {"word_repetition_filter": {"lang": "en", "tokenization": False, "rep_len": 10, "min_ratio": 0.0,
                                "max_ratio": 0.5}},
    {"document_deduplicator": {"lowercase": False, "ignore_non_character": False}},
]


def main(input_dir: str, work_dir: str, np_: int) -> None:
    work = Path(work_dir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    assets = work / "assets"
    assets.mkdir(parents=True)
    (assets / "stopwords.json").write_text(json.dumps({"en": GOPHER_STOP_WORDS}))
    PROCESS[3]["stopwords_filter"]["stopwords_dir"] = str(assets)
    config = {
        "project_name": "curate-bench",
        "dataset_path": str(Path(input_dir).resolve()),
        "export_path": str(work / "out" / "kept.jsonl"),
        "np": np_,
        "text_keys": "text",
        "open_tracer": False,
        "use_cache": False,
        "process": PROCESS,
    }
    (work / "config.yaml").write_text(json.dumps(config, indent=1))  # JSON is YAML
    env = {**os.environ, "HF_HOME": str(work / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "DATA_JUICER_CACHE_HOME": str(work / "djcache")}
    dj_process = Path(sys.executable).parent / "dj-process"
    start = time.perf_counter()
    subprocess.run([str(dj_process), "--config", str(work / "config.yaml")], env=env, check=True, cwd=work)
    seconds = time.perf_counter() - start
    kept = sum(1 for _ in open(work / "out" / "kept.jsonl", "rb"))  # (kept_stats.jsonl is beside it)
    print(json.dumps({"kept": kept, "seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
