"""Plain read -> write: `curate run` with no steps vs bare pyarrow on the same files (JSONL.gz in, and Parquet in).

    python bench/sections/io.py [--files K] [--workers 2] [--section-out PATH]

Inputs: the first K files (default: all) of the demo corpus (bench/.data/corpus), and the same rows as
Parquet (zstd; converted once into bench/.data/corpus-parquet). Every side writes Parquet with curate's
writer settings (curate/io/writer.py): zstd, statistics, and the same row-group size, which is read from
curate's own output of that run (its writer cuts a row group at 64 Ki rows or 64 MiB of Arrow data,
whichever comes first). Two bare-pyarrow baselines, each as fast as pyarrow makes it:

- per-file processes: `--workers` forked processes, one input file at a time each, whole-file reads with
  pyarrow's threads (pyarrow.json.read_json / pq.read_table) and one pq.write_table per file;
- pyarrow.dataset: one process, ds.dataset(files).to_batches -> ds.write_dataset, pyarrow's own
  thread pool over all files (row groups fixed with min/max_rows_per_group).

Each side is a separate process tree measured the same way (wall, CPU seconds of the tree, peak RSS). The
ratio is curate's throughput over the best baseline's (by wall, and by CPU). Target: >= 50%.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import collections
import multiprocessing
import shutil

import pyarrow.parquet as pq

import harness as h

COMPRESSION = "zstd"  # curate's OutputSpec default


def _read(src: Path):
    import pyarrow.json as pjson

    if src.suffix == ".parquet":
        return pq.read_table(src)
    return pjson.read_json(src)


def _copy_one(job: tuple[Path, Path, int]) -> int:
    src, dst, row_group = job
    table = _read(src)
    pq.write_table(table, dst, compression=COMPRESSION, row_group_size=row_group, write_statistics=True)
    return table.num_rows


def bare_per_file(files: list[Path], out: Path, workers: int, row_group: int) -> int:
    jobs = [(f, out / (f.name.split(".")[0] + ".parquet"), row_group) for f in files]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return sum(pool.map(_copy_one, jobs, chunksize=1))


def bare_dataset(files: list[Path], out: Path, row_group: int) -> int:
    import pyarrow.dataset as ds

    fmt = "parquet" if files[0].suffix == ".parquet" else "json"
    source = ds.dataset([str(f) for f in files], format=fmt)
    rows_per_file = -(-source.count_rows() // len(files))
    options = ds.ParquetFileFormat().make_write_options(compression=COMPRESSION, write_statistics=True)
    # From the scanner's reader: write_dataset(dataset) and dataset.to_table() hang on JSON fragments in
    # pyarrow 26 (seen here with 3+ gzipped files); the reader path streams the same scan.
    ds.write_dataset(source.scanner().to_reader(), out, format="parquet", file_options=options, use_threads=True,
                     min_rows_per_group=row_group, max_rows_per_group=row_group,
                     max_rows_per_file=max(rows_per_file, row_group), existing_data_behavior="overwrite_or_ignore")
    return h.parquet_rows(out)


def _bare_main(argv: list[str]) -> None:
    """`sections/io.py --bare MODE OUT WORKERS ROW_GROUP FILE...`: one bare-pyarrow run, in its own process."""
    mode, out, workers, row_group, *files = argv
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    paths = [Path(f) for f in files]
    rows = bare_per_file(paths, out, int(workers), int(row_group)) if mode == "per-file" else \
        bare_dataset(paths, out, int(row_group))
    print(rows)


def parquet_copy_of(files: list[Path]) -> list[Path]:
    """The corpus files as Parquet (zstd), converted once."""
    folder = h.CORPUS_DIR.with_name(h.CORPUS_DIR.name + "-parquet")
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        dst = folder / (f.name.split(".")[0] + ".parquet")
        if not dst.exists():
            tmp = dst.with_suffix(".tmp")
            _copy_one((f, tmp, 64 * 1024))
            tmp.rename(dst)
        out.append(dst)
    return out


def row_groups(folder: Path) -> tuple[int, int]:
    """(number of row groups, the most rows in one group) of the Parquet files in `folder`."""
    sizes = collections.Counter()
    for p in sorted(folder.glob("*.parquet")):
        meta = pq.ParquetFile(p).metadata
        sizes.update(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    return sum(sizes.values()), max(sizes)


def curate_copy(files: list[Path], work: Path, workers: int, label: str) -> h.Measured:
    inputs = work / f"input-{label}"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir(parents=True)
    for f in files:
        (inputs / f.name).symlink_to(f)
    pattern = "*.parquet" if label == "parquet" else "*.jsonl.gz"
    recipe = h.write_recipe(work / f"recipe-{label}.yaml", str(inputs / pattern), work / f"curate-{label}", [])
    m = h.curate_run(recipe, "--workers", str(workers), "--overwrite", log=work / f"curate-{label}.log")
    h.require_ok(m, f"curate run ({label})")
    return m


def warm(files: list[Path]) -> None:
    """Read every input once, so no side pays for the first read from disk."""
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(16 << 20):
                pass


def main():
    if sys.argv[1:2] == ["--bare"]:
        return _bare_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=0, help="use the first K corpus files (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    jsonl = h.corpus_files(h.corpus())[: args.files or None]
    parquet = parquet_copy_of(jsonl)
    work = h.RUNS / "io"
    rows, headlines, group_sizes, notes = [], [], {}, []
    for label, files in (("jsonl.gz", jsonl), ("parquet", parquet)):
        warm(files)
        m = curate_copy(files, work, args.workers, label)
        docs = h.parquet_rows(work / f"curate-{label}" / "data")
        groups, group_rows = row_groups(work / f"curate-{label}" / "data")
        group_sizes[label] = group_rows
        sides = {"curate run (no steps)": (m, groups)}
        for mode in ("per-file", "dataset"):
            out = work / f"bare-{mode}-{label}"
            limit = max(120.0, 20 * m.seconds)
            b = h.run_measured([sys.executable, __file__, "--bare", mode, str(out), str(args.workers), str(group_rows),
                                *map(str, files)], cwd=h.BENCH, log=work / f"bare-{mode}-{label}.log", kill_after=limit)
            if b.returncode == -9:
                notes.append(f"- bare pyarrow {mode} ({label} in) did not finish within {limit:.0f}s and was killed; "
                             "it is left out of the comparison.")
                continue
            h.require_ok(b, f"bare pyarrow {mode} ({label})")
            written = int(b.output.strip().splitlines()[-1])
            if written != docs:
                raise SystemExit(f"bare pyarrow {mode} wrote {written} rows, curate {docs} ({label})")
            sides[f"bare pyarrow, {'per-file processes' if mode == 'per-file' else 'pyarrow.dataset'}"] = \
                (b, row_groups(out)[0])
        bare = {k: v for k, v in sides.items() if k.startswith("bare")}
        best_wall = min(bare, key=lambda k: bare[k][0].seconds)
        best_cpu = min(bare, key=lambda k: bare[k][0].cpu_seconds)
        for name, (r, n_groups) in sides.items():
            rows.append([label if name.startswith("curate") else "", name, f"{r.seconds:.1f}", f"{docs / r.seconds:,.0f}",
                         f"{r.cpu_seconds:.1f}", f"{docs / r.cpu_seconds:,.0f}", f"{r.peak_rss_gb:.2f}", f"{n_groups}"])
        wall_pct = bare[best_wall][0].seconds / m.seconds
        cpu_pct = bare[best_cpu][0].cpu_seconds / m.cpu_seconds
        rows.append(["", f"**curate / best pyarrow** (wall: {best_wall.split(', ')[1]}; CPU: {best_cpu.split(', ')[1]})",
                     "", f"**{wall_pct:.0%}**", "", f"**{cpu_pct:.0%}**", "", ""])
        headlines.append([f"read -> write, curate / bare pyarrow, {label} in ({docs:,} docs)", f"{wall_pct:.0%}",
                          f"{cpu_pct:.0%}", "throughput share of the best baseline; target >= 50%"])
        print(rows[-1])
    body = "\n".join([
        f"Inputs: the first {len(jsonl)} demo-corpus files ({h.size_gb(jsonl):.2f} GB JSONL.gz; as Parquet "
        f"{h.size_gb(parquet):.2f} GB). {args.workers} worker processes for curate and for the per-file baseline; "
        f"every output is Parquet, zstd, with statistics, and row groups of "
        f"{', '.join(f'{n:,} rows ({k} in)' for k, n in group_sizes.items())}: the size curate's writer chose, which "
        f"the baselines are given. Inputs are read once before the runs (page cache warm for every "
        f"side). Load average at the end {h.load()}.", "",
        h.table(["input", "side", "wall s", "docs/s (wall)", "CPU s", "docs/CPU-s", "peak RSS GB", "row groups"], rows),
        "", "The ratio rows are curate's throughput as a share of the best baseline's (target >= 50%): wall and CPU "
        "each against the baseline that is best by that measure. curate's output also holds its `_id` column, which "
        "the baselines do not write; its run includes the manifest and run directory bookkeeping.",
    ] + ([""] + notes if notes else []))
    h.emit(args, body, headlines)


if __name__ == "__main__":
    main()
