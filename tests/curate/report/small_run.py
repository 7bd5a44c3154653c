"""A small finished run whose every figure is known: two hive partitions (lang=en, lang=fr), one
file each; token_count (a word-level tokenizer: a token per word), a length filter and exact_dedup.

lang=en/a.jsonl: a 3-copy duplicate cluster (one kept), a 2-copy one, one short row, one unique row.
lang=fr/b.jsonl: one short row, two unique rows.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_jsonl, write_recipe

DUP = "the same words again and again in this one"        # 9 words, 42 characters
PAIR = "a pair of rows that say exactly the same thing here"  # 11 words
EN = [{"text": DUP, "url": "https://a.example.com/1"}, {"text": "tiny", "url": "https://b.example.org/2"},
      {"text": DUP, "url": "https://b.example.org/3"}, {"text": PAIR, "url": "https://a.example.com/4"},
      {"text": "one row only english has among all of them", "url": "https://a.example.com/5"},
      {"text": DUP, "url": "https://a.example.com/6"}, {"text": PAIR, "url": "https://b.example.org/7"}]
FR = [{"text": "court", "url": "https://c.example.fr/1"},
      {"text": "une ligne en francais assez longue pour rester", "url": "https://c.example.fr/2"},
      {"text": "une autre ligne en francais qui reste aussi la", "url": "https://c.example.fr/3"}]
REMOVED_SHORT = 2
REMOVED_DUPLICATES = 3  # two copies of DUP, one of PAIR


def tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = sorted({w for r in EN + FR for w in r["text"].split()})
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(path))
    return path


def build(root: Path) -> Path:
    """The run directory of the small run (report written), under `root`."""
    from typer.testing import CliRunner

    from curate.cli import app

    write_jsonl(root / "in" / "lang=en" / "a.jsonl", EN)
    write_jsonl(root / "in" / "lang=fr" / "b.jsonl", FR)
    recipe = write_recipe(root / "r.yaml", f"""
name: small
input: {{path: "{root}/in", text_column: text}}
output: {{path: "{root}/out"}}
steps:
  - token_count: {{tokenizer: "{tokenizer(root / 'tokenizer.json')}"}}
  - sql_filter: {{where: "length(text) >= 20", reason: too_short}}
  - exact_dedup: {{}}
""")
    res = CliRunner().invoke(app, ["run", str(recipe)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return root / "out"
