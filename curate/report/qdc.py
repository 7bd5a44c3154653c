"""The QDC figures of a run, taken from its manifest: the run's own dataset metrics (recipe
`metrics:`), dataset_metrics steps and qdc_select summaries."""

from __future__ import annotations

# Dataset metrics shown side by side, with the direction that means "more diverse".
DIVERSITY = [("distinct_1", "higher"), ("distinct_2", "higher"), ("distinct_3", "higher"), ("distinct_4", "higher"),
             ("vendi", "higher"), ("mean_pairwise_distance", "higher"), ("cluster_entropy_normalized", "higher"),
             ("self_bleu", "lower"), ("compression_ratio", "lower")]


def comparisons(manifest: dict) -> list[dict]:
    """[{title, before: {metric: value}, after: {...}, labels: (before, after)}] for the run:
    its input and output as the tasks measured them (manifest `dataset_metrics`), the first and
    last dataset_metrics steps, and each qdc_select (its input and its selection)."""
    out = []
    run = manifest.get("dataset_metrics")
    if run:
        out.append({"title": f"run: input vs output (distinct-n over all rows; the other metrics on a sample of "
                             f"{run['settings']['sample']:,} rows by _id)",
                    "labels": (f"input ({run['input']['rows']:,} rows)", f"output ({run['output']['rows']:,} rows)"),
                    "before": flat(run["input"]), "after": flat(run["output"])})
    measured = [s for s in manifest.get("steps", []) if s.get("op") == "dataset_metrics" and s.get("summary")]
    if len(measured) >= 2:
        first, last = measured[0], measured[-1]
        out.append({"title": f"dataset metrics: {first['step']} vs {last['step']}",
                    "labels": (f"input ({first['step']})", f"output ({last['step']})"),
                    "before": flat(first["summary"]), "after": flat(last["summary"])})
    elif len(measured) == 1:
        out.append({"title": f"dataset metrics at {measured[0]['step']}", "labels": (measured[0]["step"], None),
                    "before": flat(measured[0]["summary"]), "after": {}})
    for s in manifest.get("steps", []):
        if s.get("op") == "qdc_select" and s.get("summary"):
            summary = s["summary"]
            out.append({"title": f"{s['step']}: input vs selection ({summary.get('method')})",
                        "labels": (f"input ({summary['input']['rows']:,} rows)",
                                   f"selection ({summary['selection']['rows']:,} rows)"),
                        "before": flat_qdc(summary["input"]), "after": flat_qdc(summary["selection"])})
    return out


def metric_names(comparison: dict) -> list[str]:
    """The metrics of a comparison: those of either side (the output may have embeddings the input lacks)."""
    return list(dict.fromkeys([*comparison["before"], *comparison["after"]]))


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


def histograms_before(manifest: dict) -> dict[str, dict]:
    """Score histograms measured by the first dataset_metrics step (the input side)."""
    for s in manifest.get("steps", []):
        if s.get("op") == "dataset_metrics" and s.get("summary", {}).get("scores"):
            return {c: d for c, d in s["summary"]["scores"].items() if d.get("count")}
    return {}
