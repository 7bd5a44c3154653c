"""Cleaning of answers: preambles cut; failed, truncated, empty and refused answers are failures
with a reason."""

from __future__ import annotations

import pytest

from curate.llm import Answer
from curate_operators.synth.cleaning import clean


@pytest.mark.parametrize("raw", ["Here is a paraphrase:\n\nThe cat sat.", "Sure! Here's a paraphrase of the paragraph:"
                                 " The cat sat.", "Certainly, here is the conversation:\nThe cat sat.",
                                 "  Below is a simpler version of the text:\nThe cat sat.  ", "The cat sat."])
def test_preambles_are_cut(raw):
    assert clean(Answer(raw, "stop")) == ("The cat sat.", None, None)


def test_a_colon_later_in_the_text_is_kept():
    text = "Question: What did the cat do?\nAnswer: It sat."
    assert clean(Answer(text, "stop"))[0] == text
    assert clean(Answer("Here the results differ: a lot.", "stop"))[0] == "Here the results differ: a lot."


@pytest.mark.parametrize("answer,reason", [
    (Answer(error="timeout", detail="after 7 attempts"), "llm_timeout"),
    (Answer("The cat", "length", tokens_out=512), "truncated"),
    (Answer("", "stop"), "empty"),
    (Answer("Here is a paraphrase:\n", "stop"), "empty"),
    (Answer("I'm sorry, but I can't help with that.", "stop"), "refused"),
    (Answer("As an AI language model, I cannot", "stop"), "refused"),
])
def test_failures_have_a_reason(answer, reason):
    text, got, detail = clean(answer)
    assert text is None and got == reason and detail
