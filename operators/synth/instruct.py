"""Prompts and parsing shared by the synthetic instruction operators (generate_qa, self_instruct,
evol_instruct). The prompts are the papers' and their reference repositories', verbatim (see
../shared/specs/synth.md), each in its text file in operators/synth/prompts/ (prompts/__init__.py
lists them); every operator takes overrides of them in its parameters, and a prompt parameter may
name a file (`@path/to/prompt.txt`) holding the text.

- Nemotron-CC DiverseQA (Su et al., arXiv 2412.02595; NVIDIA/NeMo-Curator
  `nemo_curator/synthetic/prompts.py`).
- Q&A from text: WRAP's "qa" style (Maini et al., ACL 2024), as rephrase's.
- Self-Instruct (Wang et al., arXiv 2212.10560; yizhongw/self-instruct).
- Evol-Instruct (Xu et al., arXiv 2304.12244; nlpxucan/WizardLM `Evol_Instruct/{depth,breadth}.py`,
  clean "\\n" line ends as distilabel's copy) and its elimination rules.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from curate_operators.synth.prompts import PROMPTS as WRAP_PROMPTS
from curate_operators.synth.prompts import read

NEMOTRON_SYSTEM = read("diverse_qa_system")
DIVERSE_QA = read("diverse_qa")
QA_FROM_TEXT = WRAP_PROMPTS["qa"] + "\n\n{document}"

QA_PRESETS: dict[str, tuple[str, str | None]] = {  # name -> (template with {document}, system message)
    "diverse_qa": (DIVERSE_QA, NEMOTRON_SYSTEM),
    "qa_from_text": (QA_FROM_TEXT, None),
}

SELF_INSTRUCT_HEADER = read("self_instruct")
SELF_INSTRUCT_CLF_HEADER = read("self_instruct_classification")
EVOL_DEPTH = read("evol_depth")
EVOL_METHODS = {method: read(f"evol_{method}") for method in ("constraints", "deepening", "concretizing", "reasoning")}
EVOL_BREADTH = read("evol_breadth")
EVOL_EQUAL = read("evol_equal")


def load_prompt(value: str, slots: tuple[str, ...] = ()) -> str:
    """A prompt given inline, or `@path` naming a UTF-8 file holding it; ValueError (a recipe
    error naming the parameter, from a validator) when the file cannot be read or a slot is missing."""
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"cannot read the prompt file {value[1:]}: {e}") from None
    for slot in slots:
        if "{" + slot + "}" not in text:
            raise ValueError(f"the prompt{' in ' + value[1:] if value.startswith('@') else ''} has no {{{slot}}}")
    return text


# ---------------------------------------------------------------------------------------------
# Q&A parsing: "Question:/Answer:" tags (any bullets, numbering, Markdown emphasis, Q:/A:), JSON
# (a list of objects, an object holding one, JSON lines, in ``` fences or not), and numbered lists
# whose items are a question (up to its "?") and its answer.

_MD = re.compile(r"\*\*|__|`+|^#+\s*", re.M)
_TAG = re.compile(r"(?im)(?:^|(?<=\s))(?:[-*\u2022]\s*)?(?:\(?\d+[.)]\s*)?(?:\[?\d+\]?\s*)?"
                  r"(question|q|answer|a)\s*(?:\d+\s*)?:\s+")
# What may stand before a tag's colon, read backwards from it (on the reversed text): digits and spaces, the
# tag's word, then bullets, numbers, brackets and spaces. The furthest back a tag ending at that colon can start.
_TAG_BACK = re.compile(r"(?i)[\s\d]*(?:noitseuq|q|rewsna|a)[-*\u2022()\[\].\s\d]*")
_WS = re.compile(r"\s+")
_FENCED = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)
_NUMBERED = re.compile(r"(?m)^\s*(?:\(?\d+[.)]|\[\d+\]|[-*\u2022])\s+")
_QKEYS = ("question", "q", "instruction", "prompt", "query", "input")
_AKEYS = ("answer", "a", "response", "output", "completion")


def parse_qa(text: str) -> tuple[list[tuple[str, str]], str]:
    """The (question, answer) pairs in a model's answer, and the shape found ("json", "tagged",
    "numbered", or "none" with no pairs)."""
    pairs = _from_json(text)
    if pairs:
        return pairs, "json"
    plain = _MD.sub("", text) if "**" in text or "__" in text or "`" in text or "#" in text else text
    pairs = _from_tags(plain)
    if pairs:
        return pairs, "tagged"
    pairs = _from_numbered(plain)
    if pairs:
        return pairs, "numbered"
    return [], "none"


def _clean(s: str) -> str:
    # split() cuts at the characters \s matches (str.isspace): runs of them made one space, the ends stripped.
    return " ".join(s.split()).strip("\"'").strip()


def _from_json(text: str) -> list[tuple[str, str]]:
    if "[" not in text and "{" not in text:  # JSON without an array or object holds no pair (and raising costs)
        return []
    fenced = _FENCED.findall(text)
    candidates = fenced or [text]
    for candidate in candidates:
        candidate = candidate.strip()
        docs = []
        try:
            docs = [orjson.loads(candidate)]
        except orjson.JSONDecodeError:
            start = min((i for i in (candidate.find("["), candidate.find("{")) if i >= 0), default=-1)
            if start < 0:
                continue
            try:
                docs = [orjson.loads(candidate[start:candidate.rfind("]" if candidate[start] == "[" else "}") + 1])]
            except orjson.JSONDecodeError:
                lines = [ln.strip().rstrip(",") for ln in candidate.splitlines() if ln.strip().startswith("{")]
                try:
                    docs = [[orjson.loads(ln) for ln in lines]] if lines else []
                except orjson.JSONDecodeError:
                    docs = []
        pairs = [p for doc in docs for p in _json_pairs(doc)]
        if pairs:
            return pairs
    return []


def _json_pairs(doc) -> list[tuple[str, str]]:
    if isinstance(doc, dict):
        lowered = {str(k).lower(): v for k, v in doc.items()}
        q = next((lowered[k] for k in _QKEYS if isinstance(lowered.get(k), str)), None)
        a = next((lowered[k] for k in _AKEYS if isinstance(lowered.get(k), str)), None)
        if q is not None and a is not None:
            return [(_clean(q), _clean(a))] if _clean(q) and _clean(a) else []
        lists = [v for v in doc.values() if isinstance(v, list)]
        return [p for v in lists for p in _json_pairs(v)]
    if isinstance(doc, list):
        return [p for item in doc for p in _json_pairs(item)]
    return []


def _tags(text: str) -> list[tuple[int, int, str]]:
    """(start, end, "q" or "a") of each _TAG match, as _TAG.finditer finds them, at a fraction of the cost
    (finditer tries the pattern at every character; parsing was a third of generate_qa's CPU per request).
    Every match holds exactly one colon, followed by a space: so only such colons are looked at, the
    pattern tried from the furthest back a tag ending there can start (_TAG_BACK), up to the colon."""
    marks: list[tuple[int, int, str]] = []
    backwards = None
    pos = 0  # where finditer goes on: the end of the last match
    colon = text.find(":")
    while colon >= 0:
        if colon + 1 < len(text) and text[colon + 1].isspace():
            if backwards is None:
                backwards = text[::-1]
            back = _TAG_BACK.match(backwards, len(text) - colon)
            if back:
                # endpos just past the colon's first space: the search ends at this colon.
                m = _TAG.search(text, max(pos, len(text) - back.end()), colon + 2)
                if m:
                    # the match's whole run of spaces after the colon (mostly one: no regex call then)
                    pos = colon + 2
                    if pos < len(text) and text[pos].isspace():
                        pos = _WS.match(text, pos).end()
                    # the tag's first letter says which: q or a (no other letter folds to them)
                    marks.append((m.start(), pos, "q" if text[m.start(1)] in "qQ" else "a"))
        colon = text.find(":", max(pos, colon + 1))
    return marks


def _from_tags(text: str) -> list[tuple[str, str]]:
    marks = _tags(text)
    if not any(kind == "q" for _, _, kind in marks) or not any(kind == "a" for _, _, kind in marks):
        return []
    pairs, question = [], None
    for j, (start, end, kind) in enumerate(marks):  # text before the first question is dropped
        stop = marks[j + 1][0] if j + 1 < len(marks) else len(text)
        body = _clean(text[end:stop])
        if kind == "q":
            question = body
        elif question is not None:
            if question and body:
                pairs.append((question, body))
            question = None
    return pairs


def _from_numbered(text: str) -> list[tuple[str, str]]:
    starts = [m for m in _NUMBERED.finditer(text)]
    pairs = []
    for j, m in enumerate(starts):
        item = text[m.end():starts[j + 1].start() if j + 1 < len(starts) else len(text)]
        if "?" not in item:
            continue
        q, _, a = item.partition("?")
        q, a = _clean(q + "?"), _clean(re.sub(r"^\s*[-:\u2013\u2014]+", "", a))
        if len(q) > 1 and a:
            pairs.append((q, a))
    return pairs


# ---------------------------------------------------------------------------------------------
# Self-Instruct: the prompt and the split of its answer (yizhongw/self-instruct
# `bootstrap_instructions.py`: encode_prompt, post_process_gpt3_response).

def self_instruct_prompt(instructions: list[str], classification: bool = False) -> str:
    prompt = (SELF_INSTRUCT_CLF_HEADER if classification else SELF_INSTRUCT_HEADER) + "\n"
    for i, instruction in enumerate(instructions, 1):
        instruction = re.sub(r"\s+", " ", instruction).strip().rstrip(":")
        prompt += f"{i}. {instruction}\n"
    return prompt + f"{len(instructions) + 1}."


_BLOCKED = re.compile(r"\b(?:images?|graphs?|pictures?|files?|maps?|draw|plot|go to)\b", re.I)


def split_instructions(answer: str, first: int) -> list[str]:
    """The instructions of an answer to a prompt ending with "{first}.": split on
    `\\n\\d+\\s?\\. `, each whitespace-collapsed and capitalized."""
    raw = re.split(r"\n\d+\s?\. ", f"{first}. " + answer.strip())
    out = []
    for j, inst in enumerate(raw):
        if j == 0:
            inst = re.sub(rf"^{first}\.\s*", "", inst)
        inst = re.sub(r"\s+", " ", inst).strip()
        if inst:
            out.append(inst.capitalize())
    return out


def instruction_filter(instruction: str) -> str | None:
    """The paper's heuristic filters: None when the instruction passes, else the reason."""
    words = instruction.split()
    if len(words) <= 3 or len(words) > 150:
        return "length"
    if _BLOCKED.search(instruction):
        return "unsuitable_word"
    if instruction.lower().startswith("write a program"):
        return "program"
    if not instruction[0].isascii() or not (instruction[0].isalnum() or instruction[0] in "\"'("):
        return "bad_start"
    return None


# ---------------------------------------------------------------------------------------------
# Evol-Instruct elimination (paper, "Elimination Evolving").

_COPIED = re.compile(r"#?\s*(?:the\s+)?(?:given|rewritten|created)\s+prompt\s*#?|#the given prompt#", re.I)
STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves""".split())


def evolved_text(answer: str) -> str:
    """What is kept of an evolution: the text after the last "Prompt#:" (as distilabel) or the whole."""
    for marker in ("#Rewritten Prompt#:", "#Created Prompt#:", "Prompt#:"):
        if marker in answer:
            answer = answer.rsplit(marker, 1)[1]
            break
    return answer.strip()


def copies_prompt(instruction: str) -> bool:
    """Rule 4: the evolved instruction copies words of the evolving prompt."""
    return bool(_COPIED.search(instruction))


def refuses(response: str, max_words: int = 80) -> bool:
    """Rule 2: the response contains "sorry" and is short."""
    return "sorry" in response.lower() and len(response.split()) < max_words


def only_stop_words(response: str) -> bool:
    """Rule 3: the response is only punctuation and stop words."""
    words = re.findall(r"[A-Za-z0-9']+", response.lower())
    return all(w in STOP_WORDS for w in words)


def judged_equal(answer: str) -> bool:
    """Rule 1: the judge said the two instructions are equal (no information gain)."""
    said = answer.strip().lower()
    return said.startswith("equal") or ("equal" in said and "not equal" not in said)
