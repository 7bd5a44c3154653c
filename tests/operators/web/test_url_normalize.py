"""url_normalize: canonical URLs and domains; with exact_dedup, one row per URL, the latest capture."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate_operators.web.url_normalize import UrlNormalize, epoch_seconds, normalize


@pytest.mark.parametrize("raw, url, domain", [
    ("HTTP://WWW.Example.COM:80", "http://www.example.com/", "example.com"),
    ("https://Example.com:443/a/b?x=1#frag", "https://example.com/a/b?x=1", "example.com"),
    ("  <https://example.com./p%7e%2fq>  ", "https://example.com/p~%2Fq", "example.com"),
    ("http://example.com:8080/", "http://example.com:8080/", "example.com"),
    ("https://user:pw@www.example.org/x", "https://user:pw@www.example.org/x", "example.org"),
    ("http://[2001:db8::1]:80/", "http://[2001:db8::1]/", "[2001:db8::1]"),
    ("https://bücher.example/", "https://bücher.example/", "bücher.example"),
])
def test_normalize(raw, url, domain):
    assert normalize(raw) == (url, domain)


def test_invalid_and_tracking_params():
    assert normalize("not a url") is None
    assert normalize("/relative/path") is None
    assert normalize("http://example.com:99999/") is None
    assert normalize("https://e.com/p?utm_source=x&id=3&utm_medium=y&fbclid=z",
                     ("utm_*", "fbclid")) == ("https://e.com/p?id=3", "e.com")


def test_epoch_seconds():
    assert epoch_seconds("1970-01-01T00:01:00Z") == 60.0
    assert epoch_seconds("2024-01-02T03:04:05.5Z") == pytest.approx(1704164645.5)
    assert epoch_seconds("20240102") is None or isinstance(epoch_seconds("20240102"), float)
    assert epoch_seconds("yesterday") is None and epoch_seconds(None) is None


def test_process_writes_columns_and_traces_invalid():
    batch = pa.RecordBatch.from_pydict({"url": ["HTTP://A.example/x#f", "junk", None],
                                        "warc_date": ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", None]})
    op = UrlNormalize()
    out, verdict = op.process(batch)
    assert out.column("url").to_pylist() == ["http://a.example/x", None, None]
    assert out.column("domain").to_pylist() == ["a.example", None, None]
    assert out.column("warc_time").to_pylist()[0] == epoch_seconds("2024-01-01T00:00:00Z")
    assert verdict.keep.tolist() == [True, False, False]
    assert verdict.reason.to_pylist()[1:] == ["url_invalid", "url_invalid"]
    assert op.output_schema(batch.schema).names == ["url", "warc_date", "domain", "warc_time"]


def test_exact_url_dedup_keeps_the_latest_capture(cli, tmp_path):
    pytest.importorskip("warcio")
    from tests.operators.web.warcs import Rec, write_warc

    inputs = tmp_path / "in"
    inputs.mkdir()
    page = b"<html><body><p>capture %d</p></body></html>"
    write_warc(inputs / "a.warc.gz", [
        Rec("http://www.example.com/a#top", page % 1, date="2024-01-01T00:00:00Z"),
        Rec("HTTP://WWW.EXAMPLE.COM:80/a", page % 2, date="2024-03-01T00:00:00Z"),  # the latest
        Rec("http://www.example.com/b", page % 3, date="2024-01-01T00:00:00Z"),
    ])
    write_warc(inputs / "b.warc.gz", [Rec("http://www.example.com/a", page % 4, date="2024-02-01T00:00:00Z")])
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: u\ninput:\n  path: {inputs}\noutput:\n  path: {tmp_path / 'out'}\nsteps:\n"
                      f"  - url_normalize: {{}}\n"
                      f"  - exact_dedup: {{columns: [url], normalize: false, prefer: warc_time}}\n")
    res = cli("run", recipe, "-w", "2")
    assert res.exit_code == 0, res.output
    rows = sorted(pq.read_table(tmp_path / "out" / "data").to_pylist(), key=lambda r: r["url"])
    assert [(r["url"], r["domain"], r["warc_date"]) for r in rows] == [
        ("http://www.example.com/a", "example.com", "2024-03-01T00:00:00Z"),
        ("http://www.example.com/b", "example.com", "2024-01-01T00:00:00Z"),
    ]
    assert "capture 2" in rows[0]["html"]
