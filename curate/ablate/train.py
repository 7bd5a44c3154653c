"""The proxy's training loop: plain torch, AdamW (betas 0.9/0.95, eps 1e-8), linear warmup then
cosine decay to 1% of the peak learning rate (OLMo's ladder), gradient clipping at 1.0, gradient
accumulation, fp32 on CPU and bf16 autocast on a GPU.

Deterministic on CPU: torch.use_deterministic_algorithms, a fixed number of threads, the weights
drawn from the seed, the sequence order a numpy permutation of the seed. A checkpoint (weights,
optimizer, step, losses) every `checkpoint_every` steps: `--resume` continues from it to the
same numbers as a run never stopped.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np


@dataclass
class TrainSpec:
    seq_len: int
    batch: int  # sequences per optimizer step
    accum: int  # micro-batches per step (batch / accum sequences each)
    lr: float
    warmup: float  # share of the steps
    weight_decay: float
    seed: int
    device: str
    checkpoint_every: int = 100
    grad_clip: float = 1.0
    final_lr_share: float = 0.01


@dataclass
class TrainResult:
    losses: list[float] = field(default_factory=list)  # mean training loss (nats/token) per step
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time in the loop (every torch thread)
    tokens: int = 0
    steps: int = 0


def setup_torch(threads: int, device: str = "cpu") -> None:
    """Fixed threads and deterministic algorithms: strict on CPU (the same command, the same
    losses bit for bit); on a GPU, a warning where an op has no deterministic kernel."""
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=not device.startswith("cpu"))


def lr_at(step: int, steps: int, spec: TrainSpec) -> float:
    warm = max(1, round(spec.warmup * steps))
    if step < warm:
        return spec.lr * (step + 1) / warm
    progress = (step - warm) / max(1, steps - warm)
    low = spec.lr * spec.final_lr_share
    return low + (spec.lr - low) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def steps_for(tokens: int, spec: TrainSpec) -> int:
    return math.ceil(tokens // spec.seq_len / spec.batch)


def train(
    model,
    tokens: np.ndarray,
    spec: TrainSpec,
    checkpoint: Path | None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainResult:
    """Train `model` on `tokens` (a multiple of seq_len) in place; returns the loss curve."""
    import torch
    import torch.nn.functional as F

    device = torch.device(spec.device)
    model.to(device)
    model.train()
    windows = torch.from_numpy(tokens.astype(np.int64).reshape(-1, spec.seq_len))
    order = np.random.default_rng([spec.seed, 0xDA7A]).permutation(len(windows))
    steps = steps_for(len(tokens), spec)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    rest = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": spec.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=spec.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
        foreach=False,
    )
    result = TrainResult()
    start = 0
    if checkpoint is not None and checkpoint.is_file():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        result.losses = state["losses"]
        result.seconds = state["seconds"]
        result.cpu_seconds = state.get("cpu_seconds", 0.0)
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else torch.autocast("cpu", enabled=False)
    )
    micro = max(1, spec.batch // spec.accum)
    began, cpu_began = time.perf_counter(), time.process_time()
    done_before, cpu_before = result.seconds, result.cpu_seconds
    for step in range(start, steps):
        rows = order[step * spec.batch : (step + 1) * spec.batch]
        lr = lr_at(step, steps, spec)
        for group in opt.param_groups:
            group["lr"] = lr
        targets_total = len(rows) * (spec.seq_len - 1)
        step_loss = 0.0
        for m in range(0, len(rows), micro):
            x = windows[rows[m : m + micro]].to(device)
            with autocast:
                logits = model(input_ids=x).logits
            loss = (
                F.cross_entropy(
                    logits[:, :-1].float().reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1), reduction="sum"
                )
                / targets_total
            )
            loss.backward()
            step_loss += loss.item()
        if spec.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), spec.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        result.losses.append(step_loss)
        result.seconds = done_before + time.perf_counter() - began
        result.cpu_seconds = cpu_before + time.process_time() - cpu_began
        if progress is not None:
            progress(step + 1, steps, result.seconds)
        if (
            checkpoint is not None
            and spec.checkpoint_every
            and (step + 1) % spec.checkpoint_every == 0
            and step + 1 < steps
        ):
            tmp = checkpoint.with_suffix(".tmp")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step + 1,
                    "losses": result.losses,
                    "seconds": result.seconds,
                    "cpu_seconds": result.cpu_seconds,
                },
                tmp,
            )
            os.replace(tmp, checkpoint)
    result.steps = steps
    result.tokens = len(tokens)
    model.eval()
    return result


def save_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)
