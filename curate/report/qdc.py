"""The QDC figures of a run, taken from its manifest: the run's own dataset metrics (recipe
`metrics:`), dataset_metrics steps and qdc_select summaries."""

from __future__ import annotations

from dataclasses import dataclass

from curate.manifest import Manifest

# Dataset metrics shown side by side, with the direction that means "more diverse".
DIVERSITY = [
    ("distinct_1", "higher"),
    ("distinct_2", "higher"),
    ("distinct_3", "higher"),
    ("distinct_4", "higher"),
    ("vendi", "higher"),
    ("mean_pairwise_distance", "higher"),
    ("cluster_entropy_normalized", "higher"),
    ("self_bleu", "lower"),
    ("compression_ratio", "lower"),
]


@dataclass(frozen=True)
class Comparison:
    """Two sides of a run measured alike: {metric: value} before and after, and their labels (no
    `after` label: one side only)."""

    title: str
    labels: tuple[str, str | None]
    before: dict
    after: dict


def comparisons(manifest: Manifest) -> list[Comparison]:
    """The run's comparisons: its input and output as the tasks measured them (the manifest's
    `dataset_metrics`, an observer's entry), the first and last dataset_metrics steps, and each
    qdc_select (its input and its selection). What is read inside an entry or a step's summary is
    what its observer or operator wrote there (their own payloads, untyped in the manifest)."""
    out = []
    run = manifest.entry("dataset_metrics")
    if run:
        out.append(
            Comparison(
                f"run: input vs output (distinct-n over all rows; the other metrics on a sample of "
                f"{run['settings']['sample']:,} rows by _id)",
                (f"input ({run['input']['rows']:,} rows)", f"output ({run['output']['rows']:,} rows)"),
                flat(run["input"]),
                flat(run["output"]),
            )
        )
    measured = [s for s in manifest.steps if s.op == "dataset_metrics" and s.summary]
    if len(measured) >= 2:
        first, last = measured[0], measured[-1]
        out.append(
            Comparison(
                f"dataset metrics: {first.step} vs {last.step}",
                (f"input ({first.step})", f"output ({last.step})"),
                flat(first.summary),
                flat(last.summary),
            )
        )
    elif len(measured) == 1:
        out.append(
            Comparison(
                f"dataset metrics at {measured[0].step}", (measured[0].step, None), flat(measured[0].summary), {}
            )
        )
    for s in manifest.steps:
        if s.op == "qdc_select" and s.summary:
            summary = s.summary
            out.append(
                Comparison(
                    f"{s.step}: input vs selection ({summary.get('method')})",
                    (
                        f"input ({summary['input']['rows']:,} rows)",
                        f"selection ({summary['selection']['rows']:,} rows)",
                    ),
                    flat_qdc(summary["input"]),
                    flat_qdc(summary["selection"]),
                )
            )
    return out


def metric_names(comparison: Comparison) -> list[str]:
    """The metrics of a comparison: those of either side (the output may have embeddings the input lacks)."""
    return list(dict.fromkeys([*comparison.before, *comparison.after]))


def flat(summary: dict) -> dict:
    values = {k: summary[k] for k, _ in DIVERSITY if isinstance(summary.get(k), (int, float))}
    for column, d in (summary.get("scores") or {}).items():
        if d.get("count"):
            values[f"mean {column}"] = d["mean"]
    return values


def flat_qdc(side: dict) -> dict:
    values = {f"Q: {k}": v for k, v in (side.get("Q") or {}).items() if v is not None}
    values |= {f"C: {k}": v for k, v in (side.get("C") or {}).items() if v is not None}
    values |= {f"D: {k}": v for k, v in (side.get("D") or {}).items() if k != "sample" and v is not None}
    return values


def histograms_before(manifest: Manifest) -> dict[str, dict]:
    """Score histograms measured by the first dataset_metrics step (the input side)."""
    for s in manifest.steps:
        if s.op == "dataset_metrics" and (s.summary or {}).get("scores"):
            return {c: d for c, d in s.summary["scores"].items() if d.get("count")}
    return {}
