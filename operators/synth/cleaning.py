"""What is kept of a model's answer: preambles such as "Here is a paraphrase:" are cut; an
answer that failed, was cut at max_tokens, is empty or refuses is a failure with a reason."""

from __future__ import annotations

import re

from curate.llm import Answer

# "Sure! Here is a paraphrase of the paragraph:", "Here's the conversation:", "Below is ...:"
PREAMBLE = re.compile(r"\A\s*(?:(?:sure|certainly|of course|okay|ok)\b[!,.]?\s*)?"
                      r"(?:here(?:'s| is| are)|below is|the following is)\b[^\n]{0,200}?:[ \t]*\n?", re.I)
REFUSAL = re.compile(r"\A\s*(?:i'?m sorry|i am sorry|sorry, (?:but )?i|i cannot|i can'?t|i won'?t|"
                     r"i am unable|i'?m unable|as an ai\b)", re.I)


def clean(answer: Answer) -> tuple[str | None, str | None, str | None]:
    """(text, None, None) for a usable answer, else (None, reason, detail)."""
    if not answer.ok:
        return None, f"llm_{answer.error}", answer.detail
    if answer.finish_reason == "length":
        return None, "truncated", f"cut at max_tokens after {answer.tokens_out} tokens"
    text = PREAMBLE.sub("", answer.text or "", count=1).strip()
    if not text:
        return None, "empty", "the model gave no text" + (" beyond a preamble" if (answer.text or "").strip() else "")
    if REFUSAL.match(text):
        return None, "refused", text[:200]
    return text, None, None
