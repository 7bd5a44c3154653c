"""The manifest's `slurm` (manifest.SlurmEntry): what every attempt of the run submitted, and where
each result came from, read from the batches' files under `_work/slurm/`."""

from __future__ import annotations

import json
import os
from pathlib import Path


def slurm_entry(root: Path, allocation: str | None) -> dict:
    """Every attempt's submissions (job ids), and for each item that gave a result the job and
    node that ran it (its task's `where/ITEM.json`); `root`: `_work/slurm`."""
    jobs, tasks = [], []
    attempts = sorted(
        (int(p.name.removeprefix("attempt-")), p)
        for p in root.glob("attempt-*")
        if p.name.removeprefix("attempt-").isdigit()
    )
    for number, attempt in attempts:
        for directory in sorted(p for p in attempt.iterdir() if (p / "batch.json").is_file()):
            name = directory.name.partition("-")[2]
            names = json.loads((directory / "batch.json").read_text()).get("tasks")
            runs: dict[int, int] = {}
            try:
                lines = (directory / "submissions.jsonl").read_text().splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines:
                sent = json.loads(line)
                for m in sent["items"]:
                    runs[m] = runs.get(m, 0) + 1
                jobs.append(
                    {
                        "job": sent.get("job") or sent.get("allocation", "?"),
                        "batch": name,
                        "array": sent.get("array"),
                        "offset": sent.get("offset", 0),
                        "items": sent["items"],
                        "attempt": sent.get("attempt", 1),
                        "run_attempt": number,
                    }
                )
            for where in sorted((directory / "where").glob("*.json"), key=lambda p: int(p.stem)):
                item = int(where.stem)
                if not (directory / "results" / f"{item}.pkl").exists():
                    continue
                ran = json.loads(where.read_text())
                for task in names[item] if names else [None]:  # a share of a stage's tasks, or a fit's pieces
                    tasks.append(
                        {
                            "batch": name,
                            "item": item,
                            "task": task,
                            "job": ran["job"],
                            "node": ran["node"],
                            "runs": runs.get(item, 1),
                            "run_attempt": number,
                        }
                    )
    return {
        "slurm": {
            "driver_job": os.environ.get("SLURM_JOB_ID"),
            "allocation": allocation,
            "jobs": jobs,
            "tasks": tasks,
        }
    }
