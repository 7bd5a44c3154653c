"""Rows kept beside rows removed: a few output rows (spread over the output's files) next to a
few removed ones (a reason of each step in turn), so what a recipe keeps and drops can be read
side by side. Only each file's first batch is read."""

from __future__ import annotations

import html

from curate.report.parts import clip, section
from curate.report.scan import Run, batches, first_of_each, rows_at

PAIRS = 8
BATCH = 1024


def kept(run: Run) -> list[tuple[str, str]]:
    """(id, text) of up to PAIRS output rows, from files spread over the output."""
    text = run.text_column
    if not run.data or text not in run.data_columns:
        return []
    picked = run.data[:: max(1, len(run.data) // PAIRS)][:PAIRS]
    per_file = -(-PAIRS // len(picked))
    out = []
    for path in picked:
        batch = next(batches(path, BATCH, ["_id", text]), None)
        if batch is None or not batch.num_rows:
            continue
        step = max(1, batch.num_rows // per_file)
        ids, texts = batch.column("_id").to_pylist(), batch.column(text).to_pylist()
        out += [(ids[i], texts[i]) for i in range(0, batch.num_rows, step)][:per_file]
    return out[:PAIRS]


def removed(run: Run) -> list[dict]:
    """Up to PAIRS removed rows: each step's reasons in turn (the first row of each in its trace's
    first batch), so every step and reason shows before any shows twice."""
    text = run.text_column
    per_step = []
    for step, path in run.traces.items():
        first = first_of_each(path, 1, BATCH)  # the first row of each reason in its first BATCH rows
        at = rows_at(path, [p for ps in first.values() for p in ps])
        per_step.append(
            [
                {
                    "step": step,
                    "reason": reason,
                    "detail": at[p].get("detail"),
                    "id": at[p]["_id"],
                    "text": (at[p].get("row") or {}).get(text),
                }
                for reason, (p,) in first.items()
            ]
        )
    out: list[dict] = []
    while len(out) < PAIRS and any(per_step):
        for rows in per_step:
            if rows and len(out) < PAIRS:
                out.append(rows.pop(0))
    return out


def render(run: Run) -> str:
    left, right = kept(run), removed(run)
    if not left and not right:
        return ""
    cells = []
    for i in range(max(len(left), len(right))):
        k = (f"<b>{html.escape(left[i][0])}</b>\n{html.escape(clip(left[i][1]))}") if i < len(left) else ""
        if i < len(right):
            r = right[i]
            detail = f" ({html.escape(r['detail'])})" if r["detail"] else ""
            gone = (
                f"<b>{html.escape(r['step'])}: {html.escape(r['reason'])}</b>{detail} — {html.escape(r['id'])}\n"
                f"{html.escape(clip(r['text']))}"
            )
        else:
            gone = ""
        cells.append(f'<tr><td class="sample">{k}</td><td class="sample">{gone}</td></tr>')
    return section(
        "kept-removed",
        "Rows kept beside rows removed",
        f'<table class="kept-removed"><tr><th>kept (output)</th><th>removed (step: reason)</th></tr>'
        f"{''.join(cells)}</table>",
    )
