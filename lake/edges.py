"""A candidate containment edge `container -> contained` and the decision about it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import Comparison

# Steps in pipeline order; an edge's `stage` is the step that decided it.
STAGES = ("schema", "rows", "minmax", "content", "verify")


@dataclass
class Edge:
    container: int  # index into the scan's table list
    contained: int
    # (column of the contained table, matching column of the container), in the contained table's order
    mapping: list[tuple[str, str]]
    # Column pairs with a text (CSV) side, by B's column: how their values are compared.
    compared: dict[str, Comparison] = field(default_factory=dict)
    stage: str = "schema"
    status: str = "candidate"  # candidate | pruned | confirmed | unverified
    evidence: dict = field(default_factory=dict)

    def prune(self, stage: str, **evidence) -> None:
        self.stage, self.status, self.evidence = stage, "pruned", evidence
