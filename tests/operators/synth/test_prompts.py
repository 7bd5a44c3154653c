"""The four WRAP style prompts are the paper's, word for word (../shared/specs/wrap.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from curate_operators.synth.prompts import PROMPTS

PAPER = {
    "easy": "For the following paragraph give me a paraphrase of the same using a very small vocabulary and "
            "extremely simple sentences that a toddler will understand:",
    "medium": "For the following paragraph give me a diverse paraphrase of the same in high quality English "
              "language as in sentences on Wikipedia:",
    "hard": "For the following paragraph give me a paraphrase of the same using very terse and abstruse language "
            "that only an erudite scholar will understand. Replace simple words and phrases with rare and complex ones:",
    "qa": 'Convert the following paragraph into a conversational format with multiple tags of "Question:" '
          'followed by "Answer:":',
}
REPO = Path(__file__).resolve().parents[3]
# shared/ beside the repository (or the worktrees' parent), as for the ADP fixtures
SPEC = next((p for p in (REPO / "shared", REPO.parent / "shared", REPO.parent.parent / "shared")
             if (p / "specs" / "wrap.md").is_file()), REPO / "shared") / "specs" / "wrap.md"


def test_the_four_prompts_are_the_papers():
    assert PROMPTS == PAPER


@pytest.mark.skipif(not SPEC.is_file(), reason=f"the spec is not at {SPEC}")
def test_the_prompts_are_those_of_the_spec():
    spec = SPEC.read_text()
    for style, prompt in PROMPTS.items():
        quoted = re.search(rf"- {style}: \"(.*)\"\n", spec).group(1).replace('\\"', '"')
        assert quoted == prompt
