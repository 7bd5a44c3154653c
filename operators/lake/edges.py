"""A candidate containment edge `container -> contained` and the decision about it."""

from __future__ import annotations

from dataclasses import dataclass, field

# Steps in pipeline order; an edge's `stage` is the step that decided it.
STAGES = ("schema", "rows", "minmax", "content", "verify")


@dataclass
class Edge:
    container: int  # index into the scan's table list
    contained: int
    # (column of the contained table, matching column of the container), in the contained table's order
    mapping: list[tuple[str, str]]
    stage: str = "schema"
    status: str = "candidate"  # candidate | pruned | confirmed | unverified
    evidence: dict = field(default_factory=dict)

    def prune(self, stage: str, **evidence) -> None:
        self.stage, self.status, self.evidence = stage, "pruned", evidence
