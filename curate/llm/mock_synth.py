"""The mock server's answers to the synthetic-instruction prompts (generate_qa's DiverseQA,
Self-Instruct, Evol-Instruct's rewriter, creator and equality judge, the synth recipes' pair
judge), deterministic from the prompt, so those recipes run offline end to end (`curate
serve-mock`); `answer_instruction` answers an instruction sampled with a seed (respond's n samples:
one to five sentences, now and then a refusal), deterministic from the prompt and the seed. Any
other prompt gets None here and the mock's usual reversed-words paraphrase."""

from __future__ import annotations

import hashlib
import re

TOPICS = (
    "volcanoes",
    "tax law",
    "bread baking",
    "chess openings",
    "tide pools",
    "jazz harmony",
    "sleep cycles",
    "glaciers",
    "bee colonies",
    "solar panels",
    "roman roads",
    "coral reefs",
    "lichens",
    "subway maps",
    "sourdough",
    "origami",
    "radio waves",
    "desert plants",
    "ancient coins",
    "wind turbines",
    "poetry meter",
    "soap films",
    "bird migration",
    "compound interest",
    "typewriters",
    "moss gardens",
    "kite design",
    "rainforest frogs",
    "paper mills",
    "sailing knots",
)
FORMS = (
    "Explain to a ten-year-old how {t} work and why they matter",
    "List three surprising facts about {t} and cite a reason for each",
    "Write a short persuasive paragraph arguing that {t} deserve more public attention",
    "Compare {t} with {u} in terms of their history and everyday relevance",
    "Describe a typical day of someone whose job involves {t}",
    "Suggest five interview questions for an expert on {t}",
    "Summarize the main risks associated with {t} for a general audience",
    "Give step by step advice for a beginner who wants to learn about {t}",
)

STYLES = (
    "for readers of a travel magazine",
    "using a table with short rows",
    "while avoiding any technical jargon",
    "in the voice of a weary ship captain",
    "as a numbered checklist for new volunteers",
    "citing one historical anecdote along the way",
    "in under fifty words",
    "with a rhyming couplet at the end",
)


def _draw(text: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % n


def synth_reply(messages: list[dict]) -> str | None:
    prompt = messages[-1]["content"]
    if prompt.startswith("Task:\nRead the text, ask questions and answer them."):
        return _diverse_qa(prompt)
    if prompt.startswith("Come up with a series of"):
        return _self_instruct(prompt)
    if prompt.rstrip().endswith("#Rewritten Prompt#:"):
        return _evolve_depth(prompt)
    if prompt.rstrip().endswith("#Created Prompt#:"):
        return _evolve_breadth(prompt)
    if prompt.startswith("Rate how well the "):  # the synth recipes' judge: a score from the pair's words
        return f"Score: {3 + len(prompt.split()) % 8}"
    if "Your Judgement (Just answer: Equal or Not Equal" in prompt:
        first = prompt.split("The First Prompt: ", 1)[1].split("\nThe Second Prompt: ", 1)
        second = first[1].split("\nYour Judgement", 1)[0]
        return "Equal" if " ".join(first[0].split()) == " ".join(second.split()) else "Not Equal"
    return None


def _diverse_qa(prompt: str) -> str:
    document = prompt.split("\nText:\n", 1)[1].split("\n\nTask:\nAfter reading", 1)[0]
    if "[[unparseable]]" in document:
        return "I read the text carefully; it is interesting."
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", document) if len(s.split()) >= 3][:8]
    lines = ["Here are the questions and answers based on the provided text:"]
    for s in sentences:
        words = [w.strip(".,;:!?\"'()") for w in s.split()]
        subject = max(words, key=len)
        lines.append(f"- Question: What does the text say about {subject}? Answer: {s}")
    return "\n".join(lines)


def _self_instruct(prompt: str) -> str:
    given = re.findall(r"(?m)^\d+\. (.*)$", prompt)
    nxt = len(given) + 1
    out = []
    for j in range(6):
        key = f"{prompt}:{j}"
        t, u = TOPICS[_draw(key + "t", len(TOPICS))], TOPICS[_draw(key + "u", len(TOPICS))]
        style = STYLES[_draw(key + "s", len(STYLES))]
        out.append(FORMS[_draw(key + "f", len(FORMS))].format(t=t, u=u) + f" {style}.")
    return " " + "\n".join(f"{nxt + j}. {inst}" if j else inst for j, inst in enumerate(out))


_ADDED = {
    "constraints": " Answer in no more than 120 words and include one concrete example.",
    "deepening": " Also discuss the underlying causes and the long-term consequences.",
    "concretizing": " Focus specifically on the case of {t}.",
    "reasoning": " Explain your reasoning step by step before giving a final answer.",
}


def _evolve_depth(prompt: str) -> str:
    given = prompt.split("#The Given Prompt#:\n", 1)[1].rsplit("\n#Rewritten Prompt#:", 1)[0].strip()
    if "[[same]]" in given:
        return given
    if "[[copy]]" in given:
        return f"#Rewritten Prompt#: {given} (rewritten prompt)"
    method = (
        "constraints"
        if "constraints/requirements" in prompt
        else "deepening"
        if "depth and breadth" in prompt
        else "concretizing"
        if "specific concepts" in prompt
        else "reasoning"
    )
    return given + _ADDED[method].format(t=TOPICS[_draw(given, len(TOPICS))])


def _evolve_breadth(prompt: str) -> str:
    given = prompt.split("#Given Prompt#:\n", 1)[1].rsplit("\n#Created Prompt#:", 1)[0].strip()
    t, u = TOPICS[_draw(given + "t", len(TOPICS))], TOPICS[_draw(given + "u", len(TOPICS))]
    return FORMS[_draw(given + "f", len(FORMS))].format(t=t, u=u) + ", drawing on rare historical cases."


_ANSWER = (
    "{T} is easiest to understand by starting from what it is for and who relies on it.",
    "A common mistake is to treat {t} as simpler than it is; the details matter.",
    "For example, a beginner can look at one small case of {t} and follow it from start to finish.",
    "The main reasons are history, cost and convenience, in roughly that order.",
    "Experts disagree on some points, so it helps to compare two or three sources.",
    "In short, {t} rewards patience, careful observation and a willingness to ask questions.",
    "A practical first step is to write down what you already know and what you want to find out.",
    "Keep in mind the risks as well as the benefits before drawing a conclusion.",
)


def answer_instruction(instruction: str, seed) -> str:
    """A sampled answer: sample `seed` of the instruction gets one to five sentences about its longest
    word, or (one in twelve) a short refusal."""
    key = f"{instruction}:{seed}"
    if _draw(key + "r", 12) == 0:
        return "I'm sorry, but I can't help with that request."
    topic = max((w.strip(".,;:!?\"'()") for w in instruction.split()), key=len, default="it") or "it"
    first = _draw(key + "f", len(_ANSWER))
    chosen = [_ANSWER[(first + 3 * j) % len(_ANSWER)] for j in range(1 + _draw(key + "n", 5))]
    return " ".join(s.format(t=topic, T=topic[:1].upper() + topic[1:]) for s in chosen)
