"""input.format: warc (curate/io/warc.py): the records a plain warcio iteration with datatrove's
rule keeps, decoded by their charsets, and every damaged record traced by file and offset with
the rest of the file read."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("warcio")

from curate.io import warc  # noqa: E402
from curate.io.readers import read_source, scan_schema  # noqa: E402
from curate.io.sources import Source, discover, file_format  # noqa: E402
from tests.operators.web.warcs import (Rec, broken_http, hard_cases, member_offsets, real_pages, real_records,  # noqa: E402
                                       reference, undecodable, wet_records, write_arc_gz, write_warc)


def _rows(path: Path, batch_rows: int = 8192) -> tuple[list[dict], list[tuple[int, str, str]]]:
    source = discover(str(path))[0]
    rows, bad = [], []
    for batch, b in read_source(source, batch_rows=batch_rows):
        if batch is not None:
            rows += batch.to_pylist()
        if b is not None:
            bad += list(zip(b.line, b.reason, b.error))
    return rows, bad


def _payload(row: dict) -> bytes:
    text = row["html"] if row["html"] is not None else row["text"]
    return text.encode(row["charset"])


@pytest.mark.parametrize("name", ["pages.warc.gz", "pages.warc"])
def test_reader_yields_what_warcio_with_datatroves_rule_yields(tmp_path, name):
    path = write_warc(tmp_path / name, real_records() + hard_cases())
    expected = reference(path)
    rows, bad = _rows(path)
    assert bad == []
    assert [r["url"] for r in rows] == [u for u, _ in expected]
    # the same payload bytes: each page's text encodes back, with the charset it was read by, to them
    assert [_payload(r) for r in rows] == [p for _, p in expected]
    urls = {r["url"] for r in rows}
    # left out: not HTML, a redirect, a 404, revisit/request/metadata records; kept: XHTML, no identified
    # type but an HTML Content-Type or an HTML start, an empty body, a chunked gzip-encoded page
    assert not urls & {"http://img.example/a.png", "http://pdf.example/a.pdf", "http://redirect.example/",
                       "http://missing.example/", "http://revisit.example/", "http://request.example/",
                       "http://meta.example/"}
    assert {"http://xhtml.example/", "http://noident.example/", "http://sniff.example/", "http://empty.example/",
            "http://chunked.example/", "http://nested.example/"} <= urls
    assert len([u for u in urls if u.startswith("https://real.example/")]) == len(real_pages())
    by_url = {r["url"]: r for r in rows}
    assert by_url["http://chunked.example/"]["html"] == "<html><body><p>compressed and chunked page body</p></body></html>"
    assert by_url["http://xhtml.example/"]["content_type"] == "application/xhtml+xml"
    first = rows[0]
    assert first["warc_date"] == "2024-01-02T03:04:05Z" and first["warc_record_id"].startswith("<urn:uuid:")
    assert first["text"] is None


def test_charsets_header_then_meta_then_detection(tmp_path):
    rows, _ = _rows(write_warc(tmp_path / "c.warc.gz", hard_cases()))
    by_url = {r["url"]: r for r in rows}
    assert by_url["http://latin.example/1"]["charset"] == "cp1252"  # ISO-8859-1 read as browsers do
    assert "Voilà un été très élégant à Zürich" in by_url["http://latin.example/1"]["html"]
    assert by_url["http://cp1252.example/"]["html"].count("“quoted” – dash … ellipsis") == 1
    # no charset in the header: the meta tag's
    assert by_url["http://sjis.example/meta"]["charset"] == "shift_jis"
    assert "日本語のページです。" in by_url["http://sjis.example/meta"]["html"]
    # the header says UTF-8 and lies: the meta tag decodes it
    assert by_url["http://sjis.example/lying"]["charset"] == "shift_jis"
    assert by_url["http://sjis.example/lying"]["html"] == by_url["http://sjis.example/meta"]["html"]
    # a lying header and no meta: detection
    assert "Ça été très élégant, où êtes-vous déjà ?" in by_url["http://latin.example/lying"]["html"]


def test_damaged_records_traced_by_offset_rest_read(tmp_path):
    recs = real_records() + [undecodable(), broken_http()] + real_records(2)
    clean = write_warc(tmp_path / "clean.warc.gz", recs).read_bytes()
    offsets = member_offsets(clean)  # warcinfo, then one member per record
    corrupt = bytearray(clean)
    corrupt[offsets[3] + 40: offsets[3] + 90] = b"\x00" * 50  # the third page's member
    garbage_at = offsets[5]
    damaged = bytes(corrupt[:garbage_at]) + b"not gzip at all " * 4 + bytes(corrupt[garbage_at:])
    cut = damaged[: len(damaged) - 25]  # the last member loses its end
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(cut)
    rows, bad = _rows(path)
    names = list(real_pages())
    shifted = [o + (64 if o >= garbage_at else 0) for o in offsets]
    assert [(line, reason) for line, reason, _ in bad] == [
        (shifted[3], "unparseable"),  # corrupt member
        (garbage_at, "unparseable"),  # bytes between members
        (shifted[len(real_pages()) + 1], "unparseable"),  # no charset decodes it
        (shifted[len(real_pages()) + 2], "unparseable"),  # broken HTTP status line
        (shifted[-1], "truncated"),  # the last member, cut
    ]
    errors = [e for _, _, e in bad]
    assert "gzip member is corrupt" in errors[0] and f"record at byte {shifted[3]}" in errors[0]
    assert "not a gzip member" in errors[1]
    assert "no charset decodes" in errors[2] and "http://undecodable.example/" in errors[2]
    assert "HTTP status line does not parse" in errors[3]
    assert "cut short" in errors[4]
    # everything else is read: every page but the corrupt one, and the page after the cut's predecessor
    expected = [f"https://real.example/{n}" for i, n in enumerate(names) if i != 2] + [f"https://real.example/{names[0]}"]
    assert [r["url"] for r in rows] == expected


def test_uncompressed_file_cut_short(tmp_path):
    data = write_warc(tmp_path / "w.warc", real_records(4)).read_bytes()
    path = tmp_path / "cut.warc"
    path.write_bytes(data[:-300])
    rows, bad = _rows(path)
    assert [r["url"] for r in rows] == [f"https://real.example/{n}" for n in list(real_pages())[:3]]
    [(line, reason, error)] = bad
    assert reason == "truncated" and "the file ends inside it" in error
    assert data[line:line + 8] == b"WARC/1.0"  # the offset of the cut record's start


def test_wet_and_arc(tmp_path):
    rows, bad = _rows(write_warc(tmp_path / "x.wet.gz", wet_records()))
    assert bad == []
    assert [(r["url"], r["html"], r["content_type"]) for r in rows] == [
        (f"http://wet.example/{i}", None, "text/plain") for i in range(3)]
    assert rows[1]["text"] == "Title 1\nA paragraph of extracted text number 1.\n"
    pages = [(f"http://arc.example/{i}", f"<html><body><p>arc page {i}</p></body></html>".encode()) for i in range(3)]
    rows, bad = _rows(write_arc_gz(tmp_path / "old.arc.gz", pages))
    assert bad == []
    assert [(r["url"], r["html"], r["warc_date"], r["warc_record_id"]) for r in rows] == [
        (u, b.decode(), "2008-01-02T03:04:05Z", None) for u, b in pages]


def test_whole_file_gzip_and_padding(tmp_path):
    """A WARC gzipped whole (one member: not the standard, but written by tools) and one padded
    with NULs at the end are read whole, streamed."""
    plain = write_warc(tmp_path / "p.warc", real_records(3)).read_bytes()
    (tmp_path / "whole.warc.gz").write_bytes(gzip.compress(plain))
    rows, bad = _rows(tmp_path / "whole.warc.gz")
    assert bad == [] and len(rows) == 3
    padded = write_warc(tmp_path / "pad.warc.gz", real_records(3)).read_bytes() + b"\x00" * 512
    (tmp_path / "pad.warc.gz").write_bytes(padded)
    rows, bad = _rows(tmp_path / "pad.warc.gz")
    assert bad == [] and len(rows) == 3


def test_format_by_suffix_schema_without_reading():
    for name in ("a.warc", "a.warc.gz", "a.arc.gz", "a.wet", "a.wet.gz", "s3://b/CC-MAIN-1.warc.gz"):
        assert file_format(name) == "warc"
    assert file_format("a.jsonl.gz") == "jsonl"
    assert warc.SCHEMA.names == ["url", "warc_date", "warc_record_id", "content_type", "charset", "html", "text"]


def test_scan_schema_is_fixed_and_reads_nothing(tmp_path):
    path = write_warc(tmp_path / "s.warc.gz", real_records(2))
    schema, rows = scan_schema(discover(str(path))[0])
    assert schema == warc.SCHEMA and rows is None
    (tmp_path / "junk.warc.gz").write_bytes(b"not a crawl file at all")  # never read for its schema
    assert scan_schema(discover(str(tmp_path / "junk.warc.gz"))[0])[0] == warc.SCHEMA


def test_batches_cut_by_rows_and_payload(tmp_path, monkeypatch):
    path = write_warc(tmp_path / "b.warc.gz", real_records())
    sizes = [b.num_rows for b, _ in read_source(discover(str(path))[0], batch_rows=3) if b is not None]
    assert sizes == [3, 3, 2]
    monkeypatch.setattr(warc, "BATCH_PAYLOAD_BYTES", 1)  # every page past the bound: one a batch
    sizes = [b.num_rows for b, _ in read_source(discover(str(path))[0], batch_rows=100) if b is not None]
    assert sizes == [1] * 8


def test_read_at_a_uri(tmp_path):
    pytest.importorskip("fsspec")
    path = write_warc(tmp_path / "u.warc.gz", real_records(3))
    [source] = discover(f"file://{path}")
    assert source.format == "warc" and source.is_uri
    rows = [r for b, _ in read_source(source) if b is not None for r in b.to_pylist()]
    assert [r["url"] for r in rows] == [u for u, _ in reference(path)]


def test_run_traces_bad_records_with_file_and_offset(cli, tmp_path, manifest_at):
    data = write_warc(tmp_path / "x.warc.gz", real_records(3) + [undecodable()]).read_bytes()
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "x.warc.gz").write_bytes(data[:-20])
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: w\ninput:\n  path: {inp}\noutput:\n  path: {tmp_path / 'out'}\nsteps:\n"
                      f"  - select: {{columns: [url, html]}}\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 0, res.output
    out = pq.read_table(tmp_path / "out" / "data")
    assert out.column("url").to_pylist() == [f"https://real.example/{n}" for n in list(real_pages())[:3]]
    trace = pq.read_table(tmp_path / "out" / "trace").to_pylist()
    offset = member_offsets(data)[-1]
    assert [(t["reason"], t["detail"].split(":")[0]) for t in trace] == [("truncated", f"{inp / 'x.warc.gz'}, offset {offset}")]
    manifest = manifest_at(tmp_path / "out")
    read = manifest.steps[0]
    assert read.rows_in == 4 and read.removed == 1


def test_a_twenty_megabyte_page_between_small_ones(tmp_path):
    big = b"<html><body>" + (b"<p>" + b"a line of a very long page " * 40 + b"</p>\n") * 19_000 + b"</body></html>"
    assert len(big) > 20_000_000
    path = write_warc(tmp_path / "big.warc.gz", real_records(1) + [Rec("https://big.example/", big)] + real_records(2))
    rows, bad = _rows(path)
    assert bad == [] and [r["url"] for r in rows][1] == "https://big.example/"
    assert rows[1]["html"].encode() == big and len(rows) == 4


def test_mime_types_input_option_reads_the_listed_types(cli, tmp_path):
    """input.mime_types picks the identified payload types read (default HTML/XHTML, datatrove's rule),
    through curate run (the workers' reader and preflight's first batch alike)."""
    recs = real_records(2) + [
        Rec("http://plain.example/a.txt", b"just a plain text file, not a page", http=[("Content-Type", "text/plain")],
            identified="text/plain"),
        Rec("http://img.example/a.png", b"\x89PNG\r\n\x1a\n" + bytes(range(64)), http=[("Content-Type", "image/png")],
            identified="image/png"),
        Rec("http://xhtml.example/", b"<html xmlns='http://www.w3.org/1999/xhtml'><body><p>x</p></body></html>",
            http=[("Content-Type", "application/xhtml+xml")], identified="application/xhtml+xml"),
    ]
    inp = tmp_path / "in"
    inp.mkdir()
    write_warc(inp / "m.warc.gz", recs)

    def run(name: str, extra: str) -> list[str]:
        recipe = tmp_path / f"{name}.yaml"
        recipe.write_text(f"name: {name}\ninput:\n  path: {inp}\n  format: warc\n{extra}output:\n  path: "
                          f"{tmp_path / name}\nsteps:\n  - select: {{columns: [url, content_type]}}\n")
        res = cli("run", recipe, "-w", "1")
        assert res.exit_code == 0, res.output
        return sorted(pq.read_table(tmp_path / name / "data").column("url").to_pylist())

    pages = sorted(f"https://real.example/{n}" for n in list(real_pages())[:2])
    assert run("default", "") == sorted(pages + ["http://xhtml.example/"])
    assert run("plain", "  mime_types: [text/plain, text/html]\n") == sorted(pages + ["http://plain.example/a.txt"])
    assert run("upper", "  mime_types: [Text/Plain]\n") == ["http://plain.example/a.txt"]


def test_mime_types_refused_off_warc_and_empty():
    from pydantic import ValidationError

    from curate.recipe_specs import InputSpec

    assert InputSpec(path="x", mime_types=["text/html"]).mime_types == ["text/html"]
    for bad in ({"format": "jsonl", "mime_types": ["text/html"]}, {"mime_types": []},
                {"mime_types": ["text/html; charset=utf-8"]}, {"mime_types": ["html"]}):
        with pytest.raises(ValidationError):
            InputSpec(path="x", **bad)
