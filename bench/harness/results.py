"""RESULTS.md's layout, written by bench/run_all.py: the headline table first (each theme's key figure
against its anchor, linked to its section), every section's headline rows by theme, the re-runs, then the
sections grouped by theme.

A section is the block run_all renders between `<!-- section:KEY:start -->` and `<!-- section:KEY:end -->`;
its title is a level-3 heading carrying the anchor `#KEY`. Blocks written in the earlier, flat layout (level-2
titles, in run order) are taken as they are, their headings one level down; nothing else in them changes.
"""

from __future__ import annotations

import json
import re

# (anchor, title, sections in the order they appear, the key figure: (section, row of its headlines)).
THEMES = [
    ("pipelines", "Pipelines and filters",
     ["pipeline", "gopher", "webfilters", "language-id", "web-text", "tokenize", "decon"], ("pipeline", 0)),
    ("io", "I/O and readers",
     ["io", "remote-read", "remote-write", "store-faults", "input-schema", "lake"], ("io", 0)),
    ("dedup", "Dedup",
     ["dedup-speed", "dedup-quality", "containment-candidates", "minhash-signing"], ("dedup-speed", 0)),
    ("embedding", "Embedding, pruning, image-text",
     ["embed", "prune", "clip-score", "datacomp", "embed-gpu", "clip-gpu", "clip-score-gpu"], ("embed", 0)),
    ("qdc", "QDC and run metrics", ["qdc", "run-metrics"], ("qdc", 0)),
    ("llm", "LLM, synthetic and agent data",
     ["wrap", "synth", "generate-gpu", "adp", "adp-datasets"], ("wrap", 0)),
    ("webcrawl", "Web crawl", ["fineweb-anchor", "webcrawl", "webcrawl-memory"], ("fineweb-anchor", 0)),
    ("engines", "Engines (Ray, Slurm)", ["ray", "ray-store", "slurm"], ("ray", 1)),
    ("ablate", "Ablate", ["ablate", "ablate-planted"], ("ablate", 0)),
    ("memory", "Memory, resume, faults",
     ["memory", "resume", "faults", "signals", "global-memory", "global-memory-10m", "global-memory-near-10m",
      "global-memory-select"], ("resume", 0)),
]
OTHER = ("other", "Other sections", [], None)

# The scripts' paths before bench/ was sorted by role (issue 45), for the commands printed in sections run
# before then: parse() rewrites them (the same scripts with the same options) and says so in the introduction.
MOVED_ON = "2026-11-29"
MOVED = {
    "harness.py": "harness/__init__.py",
    "traced_run.py": "harness/traced_run.py",
    "gpu_sections.sh": "harness/gpu_sections.sh",
    "anchor_datatrove.py": "anchors/datatrove_pipeline.py",
    "anchor_datajuicer.py": "anchors/datajuicer_pipeline.py",
    "anchor_datatrove_read.py": "anchors/datatrove_read.py",
    "anchor_datatrove_tokenize.py": "anchors/datatrove_tokenize.py",
    "decon_anchor.py": "anchors/datatrove_decon.py",
    "gopher_anchor.py": "anchors/datatrove_gopher.py",
    "webfilters_anchor.py": "anchors/datatrove_webfilters.py",
    "fineweb_anchor_datatrove.py": "anchors/datatrove_fineweb.py",
    "dedup_anchors.py": "anchors/dedup_minhash.py",
    "dedup_tools.py": "anchors/dedup_tools.py",
    "rclone_s3.py": "anchors/rclone_s3.py",
    "setup_anchors.sh": "anchors/setup.sh",
    "setup_dedup_anchors.sh": "anchors/setup_dedup.sh",
    "dedup_corpus.py": "corpora/dedup_corpus.py",
    "dedup_truth.py": "corpora/dedup_truth.py",
    "gopher_webtext.py": "corpora/gopher_webtext.py",
    "bench_pipeline.py": "sections/pipeline.py",
    "bench_io.py": "sections/io.py",
    "bench_memory.py": "sections/memory.py",
    "bench_resume.py": "sections/resume.py",
    "fault_campaign.py": "sections/faults.py",
    "signal_campaign.py": "sections/signals.py",
    "bench_gopher.py": "sections/gopher.py",
    "bench_webfilters.py": "sections/webfilters.py",
    "bench_language_id.py": "sections/language_id.py",
    "bench_web_text.py": "sections/web_text.py",
    "dedup_quality.py": "sections/dedup_quality.py",
    "containment_candidates.py": "sections/containment_candidates.py",
    "minhash_signing.py": "sections/minhash_signing.py",
    "dedup_speed.py": "sections/dedup_speed.py",
    "lake_bench.py": "sections/lake.py",
    "adp_bench.py": "sections/adp.py",
    "adp_datasets.py": "sections/adp_datasets.py",
    "embed_throughput.py": "sections/embed.py",
    "prune_scale.py": "sections/prune.py",
    "ray_bench.py": "sections/ray.py",
    "ray_store_bench.py": "sections/ray_store.py",
    "slurm_bench.py": "sections/slurm.py",
    "remote_read_bench.py": "sections/remote_read.py",
    "store_faults_bench.py": "sections/store_faults.py",
    "remote_write_bench.py": "sections/remote_write.py",
    "wrap_throughput.py": "sections/wrap.py",
    "synth_throughput.py": "sections/synth.py",
    "qdc_bench.py": "sections/qdc.py",
    "run_metrics_bench.py": "sections/run_metrics.py",
    "decon_bench.py": "sections/decon.py",
    "tokenize_bench.py": "sections/tokenize.py",
    "global_memory.py": "sections/global_memory.py",
    "clip_score_throughput.py": "sections/clip_score.py",
    "datacomp_funnels.py": "sections/datacomp.py",
    "clip_throughput.py": "sections/clip_gpu.py",
    "generate_throughput.py": "sections/generate_gpu.py",
    "ablate.py": "sections/ablate.py",
    "input_schema_cost.py": "sections/input_schema.py",
    "fineweb_anchor.py": "sections/fineweb_anchor.py",
    "webcrawl_memory.py": "sections/webcrawl_memory.py",
    "webcrawl.py": "sections/webcrawl.py",
    "every_recipe.py": "sections/every_recipe.py",
}
MOVED_RE = re.compile(r"(?<![\w/.-])bench/(" + "|".join(map(re.escape, sorted(MOVED, key=len, reverse=True))) + r")(?!\w)")
MOVED_NOTE = (f"- Scripts moved on {MOVED_ON} (bench/ by role: harness/, anchors/, corpora/, sections/): the commands "
              "of sections run before then are printed with the new paths (the same scripts, the same options).")


def moved(text: str) -> str:
    """`text` naming the scripts where they are now."""
    text = text.replace("(see bench/anchor_*.py)", "(see bench/anchors/datatrove_pipeline.py, datajuicer_pipeline.py)")
    return MOVED_RE.sub(lambda m: "bench/" + MOVED[m.group(1)], text)

SECTION_RE = re.compile(r"<!-- section:([\w-]+):start -->.*?<!-- section:\1:end -->\n?", re.S)
HEADING = re.compile(r"^(#{1,5}) (.*)$")


def theme_of(key: str) -> tuple:
    return next((t for t in THEMES if key in t[2]), OTHER)


def demote(text: str) -> str:
    """Every Markdown heading outside code fences one level down."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" + line if not fenced and HEADING.match(line) else line)
    return "\n".join(out)


def title_line(key: str, title: str) -> str:
    return f'### <a id="{key}"></a>{title}'


def normalise(key: str, block: str) -> str:
    """A section block in this layout: a block of the flat layout gets its headings one level down and the
    anchor on its title; one already in this layout is returned as it is."""
    lines = block.rstrip("\n").split("\n")
    at = next((i for i, ln in enumerate(lines) if HEADING.match(ln)), None)
    if at is None or lines[at].startswith("### "):
        return block.rstrip("\n") + "\n"
    lines = demote("\n".join(lines)).split("\n")
    lines[at] = title_line(key, lines[at].removeprefix("### "))
    return "\n".join(lines) + "\n"


def title_of(block: str) -> str:
    m = re.search(r"^### (?:<a id=\"[\w-]+\"></a>)?(.*)$", block, re.M)
    return m.group(1) if m else ""


def headline_rows(key: str, block: str) -> tuple[list[list[str]], str]:
    heads = re.search(r"<!-- headlines: (.*?) -->", block)
    date = re.search(r"- Date: (\S+ \S+)", block)
    return (json.loads(heads.group(1)) if heads else []), (date.group(1) if date else "")


def parse(text: str) -> tuple[list[str], list[str], dict[str, str]]:
    """An existing RESULTS.md (either layout): its introduction (the lines between the title and the first
    table or re-run list), its re-run lines, and its section blocks by key."""
    intro = []
    for line in text.split("\n")[1:]:
        if line.startswith(("## ", "Re-runs of single sections since", "<!-- reruns:start")):
            break
        intro.append(line)
    reruns = re.search(r"<!-- reruns:start -->\n(.*?)<!-- reruns:end -->", text, re.S)
    rerun_lines = [ln for ln in (reruns.group(1).splitlines() if reruns else []) if ln.strip() and ln != "- none"]
    blocks = {m.group(1): normalise(m.group(1), moved(m.group(0))) for m in SECTION_RE.finditer(text)}
    while intro and not intro[-1].strip():
        intro.pop()
    while intro and not intro[0].strip():
        intro.pop(0)
    if (MOVED_RE.search(text) or "bench/anchor_*" in text) and MOVED_NOTE not in intro:
        intro.append(MOVED_NOTE)
    return intro, rerun_lines, blocks


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def grouped(blocks: dict[str, str]) -> list[tuple[tuple, list[str]]]:
    """(theme, its sections present in `blocks`) in the themes' order; keys no theme names go last."""
    out = [(t, [k for k in t[2] if k in blocks]) for t in THEMES]
    other = [k for k in blocks if theme_of(k) is OTHER]
    return [(t, keys) for t, keys in out + [(OTHER, other)] if keys]


def key_table(blocks: dict[str, str]) -> str:
    rows = []
    for theme, keys in grouped(blocks):
        if theme[3] is None:
            continue
        key, row = theme[3]
        heads, date = headline_rows(key, blocks.get(key, ""))
        figure = heads[row] if len(heads) > row else ["(no figures: the section has not run)", "", "", ""]
        rows.append([f"[{theme[1]}](#theme-{theme[0]})", *figure, f"[{key}](#{key})", date])
    return table(["theme", "key figure (curate vs its anchor)", "wall", "CPU", "note", "section", "run"], rows)


def all_table(blocks: dict[str, str]) -> str:
    rows = []
    for theme, keys in grouped(blocks):
        for key in keys:
            heads, date = headline_rows(key, blocks[key])
            rows += [[theme[1], f"[{key}](#{key})", *r, date] for r in heads]
    return table(["theme", "section", "comparison", "wall", "CPU", "note", "run"], rows) if rows else "(none)"


def layout(intro: list[str], reruns: list[str], blocks: dict[str, str]) -> str:
    """The whole file: title, introduction, the key figures, every headline row, the re-runs, the themes."""
    lines = ["# Benchmark results", "", *intro, "",
             "## Headline figures", "",
             "Each theme's key figure: curate against its anchor (the other tool or the bare loop doing the same "
             "work), as a ratio or a share; the section linked holds the rest. Every section's headline figures "
             "follow, then the sections grouped by theme.", "",
             "<!-- headlines:start -->", key_table(blocks), "<!-- headlines:end -->", "",
             "## Every section's headline figures", "",
             "<!-- all-headlines:start -->", all_table(blocks), "<!-- all-headlines:end -->", "",
             "## Re-runs of single sections", "",
             "<!-- reruns:start -->", *(reruns or ["- none"]), "<!-- reruns:end -->", ""]
    for theme, keys in grouped(blocks):
        lines += [f'## <a id="theme-{theme[0]}"></a>{theme[1]}', ""]
        lines += [blocks[k].rstrip("\n") + "\n" for k in keys]
    return "\n".join(lines).rstrip() + "\n"
