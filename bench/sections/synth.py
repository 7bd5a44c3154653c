"""generate_qa throughput: requests per second of `curate run` with `generate_qa` (Nemotron-CC's
DiverseQA prompt and system message, one request per document, the answer parsed into a row per
question-answer pair) against the loopback mock LLM (`curate serve-mock`, its own process), side by
side with a bare asyncio aiohttp loop sending the same requests (the same bodies: built by
generate_qa's own `request`) at the same concurrency. The sides, rounds and servers are WRAP's
(bench/sections/wrap.py: `compare`, `bare`); each side gets a fresh server and curate's request
cache starts empty, so every request is sent.

    python bench/sections/synth.py [--requests 50000] [--concurrency 256] [--workers 2] [--rounds 2]

The mock answers the DiverseQA prompt with a pair per sentence of the document (three here), so
curate writes three rows per request. Only the HTTP side is measured: no GPU is lent here, so the
issue's second figure (tokens/s of the vllm backend vs vLLM's offline batch API) is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import tempfile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import harness as h  # noqa: E402
from sections import wrap  # noqa: E402

DOC = ("Document {i} of the benchmark is about tides along a rocky coast. The moon pulls the water toward it "
       "twice a day. Fishermen at harbour {i} plan their trips around the high water.")
MAX_TOKENS = 1600  # recipes/synth-qa.yaml's generation settings
STEP = """  - generate_qa:
      preset: diverse_qa
      llm: {llm}
"""


def llm_params(url: str) -> dict:
    return {"model": "mock", "base_url": url, "max_tokens": MAX_TOKENS, "temperature": 0.5, "top_p": 0.9}


def generate_qa_body(url: str):
    """Request i exactly as generate_qa sends it: its own `request` (DiverseQA, system message,
    sampling, the recipe's seed 0), in the body OpenAIBackend posts."""
    import orjson

    from curate_operators.synth.generate_qa import GenerateQA, GenerateQAParams

    op = GenerateQA(GenerateQAParams(llm=llm_params(url)), seed=0)

    def body(i: int) -> bytes:
        request = op.request(DOC.format(i=i))
        return orjson.dumps({"model": "mock", "messages": list(request.messages), **request.sampling()})

    return body


def parse_cpu_us(url: str, answers: int = 20_000) -> float:
    """CPU microseconds generate_qa spends reading one answer into its pairs (its `read`: cleaning
    and parsing), timed alone on this thread over the mock's answers to the bench's documents."""
    import time

    from curate.llm import Answer
    from curate.llm.mock_server import reply_to
    from curate_operators.synth.generate_qa import GenerateQA, GenerateQAParams

    op = GenerateQA(GenerateQAParams(llm=llm_params(url)), seed=0)
    replies = [Answer(reply_to(list(op.request(DOC.format(i=i)).messages)), "stop") for i in range(answers)]
    start = time.thread_time()
    for answer in replies:
        op.read(answer)
    return (time.thread_time() - start) / answers * 1e6


def main() -> None:
    args = wrap.parse_args()
    if args.bare:
        return wrap.bare(args.bare, args.requests, args.concurrency, generate_qa_body(args.bare))
    n = args.requests
    work = Path(tempfile.mkdtemp(prefix="synth-bench-"))
    wrap.write_inputs(work, n, args.workers, lambda i: {"text": DOC.format(i=i)})

    def check(out: Path) -> None:
        step = h.manifest(out).steps[1]
        assert step.expanded == n and step.counts["cache_misses"] == n, f"not every document answered: {step}"
        assert h.parquet_rows(out / "data") == 3 * n, "curate did not write three pairs per document"

    mean, rows, share = wrap.compare(n, args, work, "generate_qa", script=__file__, step=STEP, check=check,
                                     llm_extra=f"max_tokens: {MAX_TOKENS}, temperature: 0.5, top_p: 0.9, ")
    parse_us = parse_cpu_us("http://127.0.0.1:1/v1")
    per_request_us = {side: mean[side]["cpu"] / n * 1e6 for side in ("curate", "bare")}
    body = "\n".join([
        f"{n:,} chat requests (generate_qa, Nemotron-CC DiverseQA prompt and system message, one per document of "
        f"three sentences, max_tokens {MAX_TOKENS}, temperature 0.5, top_p 0.9; input in {2 * args.workers} JSONL "
        f"files) to `curate serve-mock` on loopback, a fresh server per side, {args.concurrency} requests in flight "
        f"on each side; the bare loop posts the same bodies (built by generate_qa's `request`). curate's request "
        f"cache starts empty, so every request is sent and each answer committed to SQLite as it arrives; each "
        f"answer is parsed into its three question-answer pairs, a row each ({3 * n:,} rows), written as Parquet. "
        f"Means of {args.rounds} rounds, sides in alternating order. Client and server share the machine's cores.",
        "",
        h.table(wrap.HEADERS, rows),
        "",
        f"curate sustains **{share:.0%}** of the bare loop's rate ({mean['curate']['per_s']:,.0f} vs "
        f"{mean['bare']['per_s']:,.0f} requests/s; the issue asks >= 90%). No GPU here: the vLLM backend vs "
        f"vLLM's offline batch API (tokens/s, the issue's second figure) is not measured.",
        "",
        "The two sides do not do the same work: the bare loop posts each body and decodes the answer's JSON, "
        "nothing more. curate also reads the JSONL input, keys every request (SHA-256 of prompt and sampling), "
        "commits each answer to its SQLite cache, parses it into question-answer pairs, builds the rows in Arrow "
        "and writes Parquet, and pays `curate run`'s start-up (imports, preflight check of the endpoint) and "
        "its report; its input's 4 files are 4 tasks, two under way at once on one event loop (the next one reads "
        "and sends while the one before finishes). With both sides on 2 shared cores, the client CPU this costs "
        "comes out of the wall rate.",
        "",
        f"Client CPU per request: curate {per_request_us['curate']:.0f} us (every process and thread of the run, "
        f"start-up and report included), the bare loop {per_request_us['bare']:.0f} us. Of curate's, reading an "
        f"answer into its pairs (generate_qa's `read`: cleaning and parsing, timed alone over 20,000 of the mock's "
        f"answers) takes {parse_us:.1f} us.",
    ])
    h.emit(args, body, [[f"generate_qa, requests/s vs a bare aiohttp loop ({args.concurrency} in flight)",
                         f"{mean['curate']['per_s']:,.0f}/s = {share:.0%} of {mean['bare']['per_s']:,.0f}/s",
                         f"{n / mean['curate']['cpu']:,.0f} vs {n / mean['bare']['cpu']:,.0f} per client CPU-s",
                         "loopback mock answering at once; target >= 90%"]])


if __name__ == "__main__":
    main()
