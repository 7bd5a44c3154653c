"""ablation.json, the table printed at the end, and the report page (ablation.html: loss curves
and the table).

ablation.json: `arms[].name`, `arms[].tokens`, `arms[].seeds[].{seed, lr, metrics, losses, ...}`,
`arms[].mean`, `arms[].std` (per metric, over seeds), `comparisons[].{a, b, metric, diff, p_value,
better, verdict, bootstrap}` (diff = mean(b) - mean(a); better: the better arm's name, null when
the difference is not significant), `primary_metric`, and the settings. With several learning
rates each metric is named `METRIC@lr=X`, and a pair ranked one way at one rate and the other way
at another is listed in `warnings`.
"""

from __future__ import annotations

import functools
import html
import itertools
import math

import numpy as np

from curate.ablate import stats


def _key(metric: str, lr: float, several: bool) -> str:
    return f"{metric}@lr={lr:g}" if several else metric


def assemble(opts, arms, samples, results, items, sets, config, threads, jobs, device, seconds) -> dict:
    several = len(opts.lrs) > 1
    seeds = list(range(opts.seeds))
    bytes_of = {f"bpb:{ts.name}": ts.bytes for ts in sets}
    out_arms = []
    for arm in arms:
        s = samples[arm.name]
        runs = [results[(lr, seed, arm.name)] for lr in opts.lrs for seed in seeds]
        values: dict[str, list[float]] = {}
        for lr in opts.lrs:
            for seed in seeds:
                for m, v in results[(lr, seed, arm.name)]["metrics"].items():
                    values.setdefault(_key(m, lr, several), []).append(v)
        out_arms.append(
            {
                "name": arm.name,
                "spec": arm.spec,
                "kind": arm.kind,
                "paths": arm.paths,
                "tokens": opts.tokens,
                "available_tokens": s.available,
                "documents": s.documents,
                "epochs": s.epochs,
                "held_out_documents": len(s.held_out),
                "seeds": runs,
                "mean": {m: float(np.mean(v)) for m, v in values.items()},
                "std": {m: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for m, v in values.items()},
            }
        )
    comparisons = []
    metrics = list(out_arms[0]["mean"])
    for lr in opts.lrs:
        base_metrics = list(results[(lr, 0, arms[0].name)]["metrics"])
        for metric in base_metrics:
            key = _key(metric, lr, several)
            for a, b in itertools.combinations([x.name for x in arms], 2):
                va = [results[(lr, s, a)]["metrics"][metric] for s in seeds]
                vb = [results[(lr, s, b)]["metrics"][metric] for s in seeds]
                diff, t, p = stats.paired_test(va, vb)
                better, sentence = stats.verdict(a, b, key, diff, p, opts.alpha)
                ia = np.mean([items[(lr, s, a)][metric] for s in seeds], axis=0)
                ib = np.mean([items[(lr, s, b)][metric] for s in seeds], axis=0)
                # a bootstrap sample's difference (idx: the items drawn)
                score = (
                    functools.partial(_bpb_diff, ia, ib, bytes_of[metric] * math.log(2))
                    if metric in bytes_of
                    else functools.partial(_mean_diff, ia, ib)
                )
                comparisons.append(
                    {
                        "a": a,
                        "b": b,
                        "metric": key,
                        "diff": diff,
                        "t": _finite(t),
                        "p_value": p,
                        "better": better,
                        "verdict": sentence,
                        "bootstrap": stats.bootstrap(score, len(ia)),
                    }
                )
    warnings = _flips(comparisons, opts.lrs) if several else []
    primary = opts.metric or metrics[0]
    if primary not in metrics:
        from curate.errors import CurateError

        raise CurateError(f"--metric {primary}: not a metric of this ablation ({', '.join(metrics)})")
    first = results[(opts.lrs[0], 0, arms[0].name)]
    return {
        "arms": out_arms,
        "comparisons": comparisons,
        "primary_metric": primary,
        "metrics": metrics,
        "warnings": warnings,
        "alpha": opts.alpha,
        "settings": {
            "model": opts.model,
            "config": config,
            "parameters": first["parameters"],
            "tokens": opts.tokens,
            "seeds": seeds,
            "lrs": opts.lrs,
            "seq_len": opts.seq_len,
            "batch": opts.batch,
            "accum": opts.accum,
            "warmup": opts.warmup,
            "weight_decay": opts.weight_decay,
            "tokenizer": opts.tokenizer or "byte-level",
            "sample_seed": opts.sample_seed,
            "holdout": opts.holdout,
            "threads": threads,
            "jobs": jobs,
            "device": device,
            "eval_text": opts.eval_text,
            "eval_mc": opts.eval_mc,
        },
        "seconds": seconds,
    }


def _finite(x):
    return x if x is None or math.isfinite(x) else (1e300 if x > 0 else -1e300)


def _bpb_diff(ia: np.ndarray, ib: np.ndarray, nb: np.ndarray, idx: np.ndarray) -> float:
    return float(ib[idx].sum() / nb[idx].sum() - ia[idx].sum() / nb[idx].sum())


def _mean_diff(ia: np.ndarray, ib: np.ndarray, idx: np.ndarray) -> float:
    return float(ib[idx].mean() - ia[idx].mean())


def _flips(comparisons: list[dict], lrs: list[float]) -> list[str]:
    """Pairs ranked one way at one learning rate and the other way at another (2512.24503)."""
    out = []
    by: dict[tuple[str, str, str], dict[str, str]] = {}  # (a, b, metric) -> {lr: the better arm}
    for c in comparisons:
        metric, lr = c["metric"].rsplit("@lr=", 1)
        if c["better"]:
            by.setdefault((c["a"], c["b"], metric), {})[lr] = c["better"]
    for (a, b, metric), winners in by.items():
        if len(set(winners.values())) > 1:
            out.append(
                f"{a} vs {b} on {metric}: the ranking flips with the learning rate ("
                + ", ".join(f"lr={lr}: {w}" for lr, w in winners.items())
                + ")"
            )
    return out


def table(result: dict):
    from rich.table import Table

    t = Table(
        title=f"ablation ({result['settings']['tokens']:,} tokens per arm, "
        f"{len(result['settings']['seeds'])} seeds, {result['settings']['parameters']:,} parameters)"
    )
    t.add_column("metric")
    for arm in result["arms"]:
        t.add_column(arm["name"], justify="right")
    for m in result["metrics"]:
        t.add_row(
            m + (" (lower better)" if stats.lower_is_better(m) else ""),
            *[f"{a['mean'][m]:.4f} ± {a['std'][m]:.4f}" for a in result["arms"]],
        )
    return t


def verdicts(result: dict) -> list[str]:
    primary = [c for c in result["comparisons"] if c["metric"] == result["primary_metric"]]
    rest = [c for c in result["comparisons"] if c["metric"] != result["primary_metric"]]
    return [c["verdict"] for c in primary + rest]


def html_page(result: dict) -> str:
    """The report page: verdicts, the table, each arm's mean loss curve (SVG, no scripts)."""
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    curves, labels = [], []  # one mean curve per arm (and learning rate, where several)
    lrs = result["settings"]["lrs"]
    for arm in result["arms"]:
        for lr in lrs:
            losses = [r["losses"] for r in arm["seeds"] if r["lr"] == lr]
            curves.append(np.mean(np.array(losses, dtype=np.float64), axis=0) if losses else np.zeros(0))
            labels.append(arm["name"] + (f" lr={lr:g}" if len(lrs) > 1 else ""))
    w, h, pad = 640, 300, 40
    top = max((float(c.max()) for c in curves if len(c)), default=1.0)
    low = min((float(c.min()) for c in curves if len(c)), default=0.0)
    lines = []
    for i, (label, c) in enumerate(zip(labels, curves)):
        if len(c) < 2:
            continue
        pts = " ".join(
            f"{pad + (w - 2 * pad) * j / (len(c) - 1):.1f},"
            f"{h - pad - (h - 2 * pad) * (v - low) / max(top - low, 1e-9):.1f}"
            for j, v in enumerate(c)
        )
        color = colors[i % len(colors)]
        lines.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>'
            f'<text x="{w - pad - 160}" y="{pad + 16 * (i + 1)}" fill="{color}">{html.escape(label)}</text>'
        )
    svg = (
        f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" font-size="12">'
        f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>'
        f'<text x="4" y="{pad}">{top:.2f}</text><text x="4" y="{h - pad}">{low:.2f}</text>'
        f'<text x="{w / 2 - 60}" y="{h - 8}">training step (mean loss over seeds, nats/token)</text>'
        + "".join(lines)
        + "</svg>"
    )
    head = "".join(f"<th>{html.escape(a['name'])}</th>" for a in result["arms"])
    rows = "".join(
        f"<tr><td>{html.escape(m)}</td>"
        + "".join(f"<td>{a['mean'][m]:.4f} ± {a['std'][m]:.4f}</td>" for a in result["arms"])
        + "</tr>"
        for m in result["metrics"]
    )
    comp = "".join(
        f"<tr><td>{html.escape(c['metric'])}</td><td>{html.escape(c['a'])}</td><td>{html.escape(c['b'])}"
        f"</td><td>{c['diff']:+.4g}</td><td>{_p(c['p_value'])}</td>"
        f"<td>[{c['bootstrap']['low']:+.4g}, {c['bootstrap']['high']:+.4g}]</td>"
        f"<td>{html.escape(c['better'] or 'no difference')}</td></tr>"
        for c in result["comparisons"]
    )
    verdict_items = "".join(f"<li>{html.escape(v)}</li>" for v in verdicts(result))
    warn = "".join(f"<li><b>warning:</b> {html.escape(x)}</li>" for x in result["warnings"])
    s = result["settings"]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>curate ablate</title>"
        f"<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}td,th{{padding:2px 8px;"
        f"text-align:right}}table{{border-collapse:collapse}}tr:nth-child(even){{background:#f4f4f4}}</style>"
        f"</head><body><h1>Ablation</h1><p>{s['tokens']:,} training tokens per arm, seeds {s['seeds']}, "
        f"{s['parameters']:,}-parameter {html.escape(str(s['model']))} proxy, lr {s['lrs']}, "
        f"{s['device']}, {s['threads']} thread(s) per run, {s['jobs']} run(s) at a time, {result['seconds']:.0f}s.</p>"
        f"<ul>{verdict_items}{warn}</ul><h2>Metrics (mean ± sd over seeds)</h2>"
        f"<table><tr><th>metric</th>{head}</tr>{rows}</table><h2>Training loss</h2>{svg}"
        f"<h2>Comparisons (paired t-test over seeds; bootstrap 95% interval over items)</h2>"
        f"<table><tr><th>metric</th><th>a</th><th>b</th><th>b - a</th><th>p</th><th>bootstrap</th>"
        f"<th>better</th></tr>{comp}</table></body></html>"
    )


def write(result: dict, output) -> None:
    from curate.ablate.train import save_json

    save_json(output / "ablation.json", result)
    (output / "ablation.html").write_text(html_page(result), encoding="utf-8")


def _p(p) -> str:
    return "" if p is None else f"{p:.3g}"
