"""The HTML pieces every report section is built of: Plotly figures (their titles above them, in
the page, so the toolbar never covers one) and tables."""

from __future__ import annotations

import html
from collections.abc import Sequence, Set as AbstractSet
from typing import Any

SAMPLE_CHARS = 400


def figure(fig, div_id: str, height: int = 380) -> str:
    title = fig.layout.title.text
    # The title as a heading above the figure: inside the figure it would share the top margin
    # with Plotly's toolbar, which covers it on narrow figures.
    fig.update_layout(title=None, height=height, margin=dict(l=40, r=20, t=30, b=40), template="plotly_white")
    div = fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{div_id}",
        default_height=f"{height}px",
        default_width="100%",
        config={"displaylogo": False, "responsive": True},
    )
    heading = f'<h4 class="fig-title">{html.escape(title)}</h4>' if title else ""
    return f'<div class="figure">{heading}{div}</div>'


def table(
    header: list[str], rows: Sequence[Sequence[Any]], numeric: AbstractSet[int] = frozenset(), css: str = ""
) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"num" if i in numeric else ""}">{html.escape(fmt(v))}</td>' for i, v in enumerate(r))
        + "</tr>"
        for r in rows
    )
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><tr>{head}</tr>{body}</table>"


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "" if v is None else str(v)


def clip(text: str | None) -> str:
    """A sample's text, cut to SAMPLE_CHARS."""
    if text is None:
        return ""
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + " …"


def section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}"><h2>{html.escape(title)}</h2>{body}</section>'
