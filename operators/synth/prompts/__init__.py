"""The synthetic-data operators' prompts, one text file each beside this module, word for word
from the papers and their reference repositories (tests pin them to ../shared/specs/wrap.md and
synth.md). A recipe replaces one through the parameter CATALOG names, inline or with '@path' to a
file of its own; `curate prompts show NAME > mine.txt` writes a shipped one out to start from.

WRAP's rephrasing prompts (Maini et al., ACL 2024) are a fidelity parameter of the method: with a
chat API the style prompt and the chunk together are the user message (TEMPLATE)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

# name (the file's stem) -> (the operator parameter that replaces it, where the text comes from)
CATALOG: dict[str, tuple[str, str]] = {
    "wrap_easy": ("rephrase: prompts.easy", "WRAP (Maini et al., ACL 2024), style easy"),
    "wrap_medium": ("rephrase: prompts.medium", "WRAP, style medium"),
    "wrap_hard": ("rephrase: prompts.hard", "WRAP, style hard"),
    "wrap_qa": ("rephrase: prompts.qa", "WRAP, style qa (generate_qa's qa_from_text preset too)"),
    "diverse_qa": ("generate_qa: template", "Nemotron-CC DiverseQA (Su et al., arXiv 2412.02595; NeMo-Curator "
                                            "nemo_curator/synthetic/prompts.py)"),
    "diverse_qa_system": ("generate_qa: system", "Nemotron-CC's chat preamble, DiverseQA's system message"),
    "self_instruct": ("self_instruct: header", "Self-Instruct (Wang et al., arXiv 2212.10560; yizhongw/self-instruct)"),
    "self_instruct_classification": ("self_instruct: header (classification: true)",
                                     "Self-Instruct, the classification tasks' header"),
    "evol_depth": ("evol_instruct: depth", "Evol-Instruct in-depth (Xu et al., arXiv 2304.12244; nlpxucan/WizardLM "
                                           "Evol_Instruct/depth.py)"),
    "evol_constraints": ("evol_instruct: methods.constraints", "Evol-Instruct, in-depth method"),
    "evol_deepening": ("evol_instruct: methods.deepening", "Evol-Instruct, in-depth method"),
    "evol_concretizing": ("evol_instruct: methods.concretizing", "Evol-Instruct, in-depth method"),
    "evol_reasoning": ("evol_instruct: methods.reasoning", "Evol-Instruct, in-depth method"),
    "evol_breadth": ("evol_instruct: breadth", "Evol-Instruct in-breadth (Evol_Instruct/breadth.py)"),
    "evol_equal": ("evol_instruct: equal", "WizardLM's equality check, appendix G (typo 'requirments' as in its "
                                           "copies)"),
}


def read(name: str) -> str:
    """A shipped prompt's text, exactly as its file holds it (no newline added or taken)."""
    return (HERE / f"{name}.txt").read_bytes().decode("utf-8")


PROMPTS: dict[str, str] = {style: read(f"wrap_{style}") for style in ("easy", "medium", "hard", "qa")}

# How the user message is built from the style's prompt and the row's text.
TEMPLATE = "{prompt}\n\n{text}"
