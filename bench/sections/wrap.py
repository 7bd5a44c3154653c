"""WRAP rephrase throughput: requests per second of `curate run` with `rephrase` against the
loopback mock LLM (`curate serve-mock`, answering at once, its own process), side by side with
a bare asyncio aiohttp client loop sending the same requests at the same concurrency, in the
same run. Each side gets a fresh server; curate's request cache starts empty (every request is
sent and stored). Rounds alternate the order of the sides.

    python bench/sections/wrap.py [--requests 50000] [--concurrency 256] [--workers 2] [--rounds 2]

Wall is the whole `curate run` (start-up, reading, writing Parquet, the cache included); CPU
seconds are the client's process tree (the mock server's are shown apart: both share the cores).
The sides, rounds and servers (`compare`) and the bare loop (`bare`) serve any LLM operator's
requests: bench/sections/synth.py runs them with generate_qa's.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import asyncio
import json
import os
import socket
import subprocess
import tempfile
import time
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import harness as h  # noqa: E402

TEXT = "Row {i} of the benchmark: a short paragraph about nothing in particular, long enough to be a prompt."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([*h.CURATE, "serve-mock", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the mock server did not start")


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rephrase_body(i: int) -> bytes:
    """Request i as rephrase sends it (style medium, the mock's model), a JSON body."""
    import orjson

    from curate_operators.synth.prompts import PROMPTS, TEMPLATE

    return orjson.dumps({"model": "mock", "max_tokens": 512, "temperature": 0.0, "top_p": 1.0, "seed": 0,
                         "messages": [{"role": "user", "content": TEMPLATE.format(prompt=PROMPTS["medium"],
                                                                                 text=TEXT.format(i=i))}]})


def bare(url: str, n: int, concurrency: int, body: Callable[[int], bytes] = rephrase_body) -> None:
    """The anchor: the operator's chat requests (`body(i)`, as it sends them), from one asyncio loop."""
    import aiohttp
    import orjson

    async def main() -> int:
        ok = 0
        todo = iter(range(n))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            async def sender() -> None:  # `concurrency` senders pulling requests in turn
                nonlocal ok
                for i in todo:
                    async with session.post(f"{url}/chat/completions", data=body(i),
                                            headers={"Content-Type": "application/json"}) as r:
                        payload = await r.read()
                    ok += bool(orjson.loads(payload)["choices"][0]["message"]["content"])

            await asyncio.gather(*(sender() for _ in range(concurrency)))
        return ok

    print(f"answered {asyncio.run(main())}")


def io_processes(workers: int) -> int:
    """How many processes curate gives an io stage (curate/engine/local/engine.py: one per 4 cores)."""
    from curate.engine.local.engine import available_cores

    return min(workers, max(1, available_cores() // 4))


REPHRASE_STEP = """  - rephrase:
      styles: [medium]
      ratio: '0:1'
      llm: {llm}
"""


def side(name: str, n: int, args, work: Path, script: str = __file__, step: str = REPHRASE_STEP,
         llm_extra: str = "", check: Callable[[Path], None] | None = None) -> dict:
    """One side of one round: the bare loop (`script --bare URL`) or `curate run` of `step` (its `{llm}`
    the llm block: the mock, the concurrency, a fresh cache, `llm_extra` settings) over work/in-*.jsonl,
    against a fresh mock server; `check(out)` checks the run's output."""
    port = free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        server_cpu = cpu_of(server.pid)
        if name == "bare":
            m = h.run_measured([sys.executable, script, "--bare", url, "--requests", str(n),
                                "--concurrency", str(args.concurrency)], log=work / "bare.log")
        else:
            out = work / f"out-{time.monotonic_ns()}"
            recipe = work / "bench.yaml"
            llm = (f"{{model: mock, base_url: '{url}', {llm_extra}"
                   f"concurrency: {args.concurrency // io_processes(args.workers)}, "
                   f"cache_dir: '{work}/cache-{time.monotonic_ns()}'}}")
            recipe.write_text(f"name: llm-bench\ninput: {{path: '{work}/in-*.jsonl'}}\noutput: {{path: '{out}'}}\n"
                              f"steps:\n{step.format(llm=llm)}")
            m = h.curate_run(recipe, "--workers", str(args.workers), log=work / "curate.log")
            h.require_ok(m, "curate run")
            (check or (lambda out: None))(out)
        server_cpu = cpu_of(server.pid) - server_cpu
    finally:
        server.kill()
        server.wait()
    h.require_ok(m, name)
    return {"seconds": m.seconds, "cpu": m.cpu_seconds, "server_cpu": server_cpu, "per_s": n / m.seconds}


def write_inputs(work: Path, n: int, workers: int, row: Callable[[int], dict]) -> None:
    """n rows (`row(i)`) in 2 x workers JSONL files: a corpus of several files, so every worker has tasks."""
    files = 2 * workers
    for k in range(files):
        with open(work / f"in-{k}.jsonl", "w") as f:
            for i in range(k * n // files, (k + 1) * n // files):
                f.write(json.dumps(row(i)) + "\n")


def compare(n: int, args, work: Path, what: str, **side_options) -> tuple[dict, list[list[str]], float]:
    """`args.rounds` rounds of both sides, in alternating order: each side's means, the table rows
    (curate's labelled with `what`, the operator), and curate's rate as a share of the bare loop's."""
    results: dict[str, list[dict]] = {"bare": [], "curate": []}
    for r in range(args.rounds):
        for name in (["bare", "curate"] if r % 2 == 0 else ["curate", "bare"]):
            results[name].append(side(name, n, args, work, **side_options))
            x = results[name][-1]
            print(f"round {r + 1} {name}: {x['per_s']:,.0f} requests/s ({x['seconds']:.1f}s wall, {x['cpu']:.1f} "
                  f"client CPU-s, {x['server_cpu']:.1f} server CPU-s)", flush=True)
    mean = {k: {f: sum(x[f] for x in v) / len(v) for f in v[0]} for k, v in results.items()}
    procs = io_processes(args.workers)
    label = {"curate": f"curate run --workers {args.workers}, {what} ({procs} process{'es' if procs > 1 else ''} x "
                       f"{args.concurrency // procs} in flight)",
             "bare": f"bare asyncio aiohttp loop ({args.concurrency} in flight, one process)"}
    rows = [[label[name], f"{n:,}", f"{mean[name]['seconds']:.1f}", f"{mean[name]['cpu']:.1f}",
             f"{mean[name]['server_cpu']:.1f}", f"{mean[name]['per_s']:,.0f}", f"{n / mean[name]['cpu']:,.0f}",
             " / ".join(f"{x['per_s']:,.0f}" for x in results[name])]
            for name in ("curate", "bare")]
    return mean, rows, mean["curate"]["per_s"] / mean["bare"]["per_s"]


HEADERS = ["side", "requests", "wall s", "client CPU s", "server CPU s", "requests/s", "requests per client CPU-s",
           "requests/s per round"]


def parse_args() -> argparse.Namespace:
    """The options of a request-throughput section (this one, synth): the two sides' sizes, and
    --bare URL, the bare loop's own process."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=50_000)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bare", metavar="URL", help=argparse.SUPPRESS)
    h.add_section_args(ap)
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    if args.bare:
        return bare(args.bare, args.requests, args.concurrency)
    n = args.requests
    work = Path(tempfile.mkdtemp(prefix="wrap-bench-"))
    write_inputs(work, n, args.workers, lambda i: {"text": TEXT.format(i=i)})

    def check(out: Path) -> None:
        assert h.parquet_rows(out / "data") == n, "curate did not rephrase every row"

    mean, rows, share = compare(n, args, work, "rephrase", check=check)
    body = "\n".join([
        f"{n:,} chat requests (style medium, one per row, ratio 0:1; input in {2 * args.workers} JSONL files) to `curate serve-mock` on loopback, a fresh "
        f"server per side, {args.concurrency} requests in flight on each side; curate's request cache starts empty, "
        f"so every request is sent and each answer committed to SQLite as it arrives, and the run writes Parquet. "
        f"Means of {args.rounds} rounds, sides in alternating order. Client and server share the machine's cores.",
        "",
        h.table(HEADERS, rows),
        "",
        f"curate sustains **{share:.0%}** of the bare loop's rate ({mean['curate']['per_s']:,.0f} vs "
        f"{mean['bare']['per_s']:,.0f} requests/s; the issue asks >= 2,000/s and >= 80%).",
    ])
    h.emit(args, body, [[f"WRAP rephrase, requests/s vs a bare aiohttp loop ({args.concurrency} in flight)",
                         f"{mean['curate']['per_s']:,.0f}/s = {share:.0%} of {mean['bare']['per_s']:,.0f}/s",
                         f"{n / mean['curate']['cpu']:,.0f} vs {n / mean['bare']['cpu']:,.0f} per client CPU-s",
                         "loopback mock answering at once"]])


if __name__ == "__main__":
    main()
