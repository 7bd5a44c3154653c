"""Every step's summary as tables a person reads, not JSON: its figures as a two-column table
(nested ones as dotted names), a mapping of names to records as one table (a row per name, e.g.
dataset_metrics' scores or qdc_select's input and selection), and a mapping of numbers to
numbers (SemDeDup's `kept_by_eps`) as a table and a curve, the chosen value marked: which eps to
pick is then read off the page. Histograms and per-cluster lists are drawn elsewhere."""

from __future__ import annotations

import html
from typing import TypeGuard

from curate.manifest import Manifest
from curate.report.parts import figure, fmt, section, table

SHORT_LIST = 12


def _number(v) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numeric_key(k) -> float | None:
    try:
        return float(k)
    except (TypeError, ValueError):
        return None


def is_curve(v) -> bool:
    """A mapping of numbers to numbers with at least two points: {"0.05": 812, "0.1": 640}."""
    return isinstance(v, dict) and len(v) >= 2 and all(_numeric_key(k) is not None and _number(x) for k, x in v.items())


def is_records(v) -> bool:
    """A mapping of names to records: {"input": {...}, "selection": {...}}."""
    return isinstance(v, dict) and len(v) >= 2 and all(isinstance(x, dict) for x in v.values())


def flatten(v, prefix: str = "") -> dict[str, object]:
    """Dotted name -> a value shown in a cell; histograms (drawn above) and lists of records (the
    cluster tables) left out, long lists shown by their length."""
    if isinstance(v, dict):
        out: dict[str, object] = {}
        for k, x in v.items():
            if k == "histogram" or (isinstance(x, list) and x and all(isinstance(r, dict) for r in x)):
                continue
            out |= flatten(x, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(v, list):
        return {prefix: ", ".join(fmt(x) for x in v) if len(v) <= SHORT_LIST else f"{len(v):,} values"}
    return {prefix: v}


def _curves(go, step: str, summary: dict, names: list[str], n: int) -> str:
    """One table of the curves sharing their points, and the first drawn (the chosen point marked
    where the summary names it: `eps` for `kept_by_eps`). Every point is a number (is_curve)."""
    points = sorted(summary[names[0]], key=float)
    rows = [[p] + [summary[c].get(p) for c in names] for p in points]
    first = names[0]
    chosen_key = first.split("_by_", 1)[1] if "_by_" in first else None
    chosen = summary.get(chosen_key) if chosen_key else None
    x = [float(p) for p in points]
    fig = go.Figure(go.Scatter(x=x, y=[summary[first][p] for p in points], mode="lines+markers", name=first))
    if _number(chosen) and any(abs(v - chosen) < 1e-12 for v in x):
        at = next(p for p in points if abs(float(p) - chosen) < 1e-12)
        fig.add_trace(
            go.Scatter(
                x=[chosen],
                y=[summary[first][at]],
                mode="markers+text",
                name="chosen",
                text=[f"{chosen_key} = {fmt(chosen)}"],
                textposition="top right",
                marker=dict(size=12, color="#d62728"),
            )
        )
    fig.update_layout(title=f"{step}: {first}", xaxis_title=chosen_key or "", yaxis_title=first, showlegend=False)
    return table([chosen_key or "point", *names], rows, numeric=set(range(len(names) + 1)), css="curve") + figure(
        fig, f"curve-{n}", 300
    )


def _records(title: str, records: dict[str, dict]) -> str:
    flat = {name: flatten(r) for name, r in records.items()}
    columns = list(dict.fromkeys(c for r in flat.values() for c in r))
    if not columns:
        return ""
    return f"<h4>{html.escape(title)}</h4>" + table(
        ["", *columns],
        [[name, *(r.get(c) for c in columns)] for name, r in flat.items()],
        numeric=set(range(1, len(columns) + 1)),
    )


def render_summary(go, step: str, summary: dict, n: int) -> str:
    plain: dict[str, object] = {}
    blocks = []
    curves = [k for k, v in summary.items() if is_curve(v)]
    groups: dict[tuple, list[str]] = {}
    for k in curves:
        groups.setdefault(tuple(sorted(summary[k])), []).append(k)
    for i, names in enumerate(groups.values()):
        blocks.append(_curves(go, step, summary, names, n * 10 + i))
    # Sibling records of one shape (qdc_select's input and selection) are a table too.
    shapes: dict[tuple, list[str]] = {}
    for k, v in summary.items():
        if isinstance(v, dict) and k not in curves and not is_records(v):
            shapes.setdefault(tuple(sorted(v)), []).append(k)
    siblings = {k: names for names in shapes.values() if len(names) >= 2 for k in names}
    for k, v in summary.items():
        if k in curves or (k in siblings and k != siblings[k][0]):
            continue
        if is_records(v) or k in siblings:
            named = v if k not in siblings else {name: summary[name] for name in siblings[k]}
            blocks.append(_records(" / ".join(siblings[k]) if k in siblings else k, named))
        else:
            plain |= flatten(v, k)
    head = table(["", ""], [[k, v] for k, v in plain.items()], numeric={1}) if plain else ""
    return f"<h3>{html.escape(step)}</h3>{head}{''.join(blocks)}"


def render(go, manifest: Manifest) -> str:
    parts = [
        render_summary(go, s.step, s.summary, n)
        for n, s in enumerate(manifest.steps)
        if isinstance(s.summary, dict) and s.summary
    ]
    return section("step-summaries", "Step summaries", "".join(parts)) if parts else ""
