"""ADP itself as a source: records that already are ADP trajectories (a release's std files, or the
rows of a conversion run: content and details as JSON text) pass as they are, so `curate adp
validate` and `export` read them with the same steps as any source; adp_validate then checks them."""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible
from curate_operators.agent.rows import trajectory_doc

NEEDS = "ADP trajectories (what `curate adp validate` and `export` read)"


def convert(record: dict, fallback_id: str) -> dict:
    try:
        doc = trajectory_doc(record)
    except ValueError as e:
        raise Unconvertible(f"trajectory {record.get('id')!r}: {e}") from None
    # The row layout needs a string id and the content to hold (its events adp_validate checks).
    if not isinstance(doc.get("id"), str):
        raise Unconvertible(f"trajectory without a string 'id' (got {type(doc.get('id')).__name__})")
    if "content" not in doc:
        raise Unconvertible(f"trajectory {doc['id']!r}: no 'content'")
    return doc
