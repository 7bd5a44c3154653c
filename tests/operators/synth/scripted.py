"""A scripted LLM backend for the synth operators' unit tests: answers from a function of the
last user message (or the whole request), counting what it was asked."""

from __future__ import annotations

from curate.llm import Answer


class Scripted:
    kind, model = "scripted", "scripted"

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    async def generate(self, requests, on_answer=None):
        answers = []
        for i, r in enumerate(requests):
            self.asked.append(r)
            got = self.reply(r.messages[-1]["content"])
            answers.append(got if isinstance(got, Answer) else Answer(got, "stop", 1, len(got.split())))
            if on_answer:  # as each arrives, as the real backends (curate/llm/types.py: Backend)
                on_answer(i, answers[-1])
        return answers

    def take_counts(self):
        return {}
