"""recipes/fineweb.yaml end to end on WARC files built here: the demo corpus's pages as HTML
responses (with a blocked domain, a German page, a near-copy, contact details) beside the real
pages, a WET file and a damaged archive; every step's funnel conserved and each planted case
removed by the step meant for it."""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytest.importorskip("warcio")
pytest.importorskip("trafilatura")
pytest.importorskip("py3langid")

from curate.demo import generate  # noqa: E402
from tests.operators.web.warcs import Rec, real_records, wet_records, write_warc  # noqa: E402

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "fineweb.yaml"
GERMAN = ("Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen "
          "begabt und sollen einander im Geist der Brüderlichkeit begegnen. ")


def _page(title: str, text: str) -> bytes:
    paragraphs = "".join(f"<p>{html.escape(p)}</p>\n" for p in text.split("\n") if p.strip())
    return (f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head><body>"
            f"<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav><article><h1>{html.escape(title)}</h1>"
            f"{paragraphs}</article><footer>Copyright 2024</footer></body></html>").encode()


def _corpus(tmp_path: Path) -> tuple[Path, list[dict]]:
    [demo] = generate(tmp_path / "demo", docs=60, files=1, seed=0)
    rows = [json.loads(line) for line in gzip.open(demo, "rt")]
    good = [r for r in rows if r["planted"] is None]
    # good[1]'s text moves to the contact page (left where it was, the two would be near-copies)
    recs = [Rec(r["url"], _page(f"Post {i}", r["text"])) for i, r in enumerate(rows) if r is not good[1]]
    recs.append(Rec("https://blocked.example/page", _page("Blocked", good[0]["text"] + "\nA blocked page, kept away.")))
    recs.append(Rec("https://de.example/seite", _page("Seite", "\n".join([GERMAN * 3] * 6))))
    contact = good[1]["text"].replace("\n\n", "\n\nWrite to jane.doe@example.org or visit 8.8.8.8 today.\n\n", 1)
    recs.append(Rec("https://contact.example/", _page("Contact", contact)))
    # a near-copy of a good page (one paragraph appended) at another URL
    recs.append(Rec("https://copy.example/", _page("Copy", good[2]["text"] + "\nOne more closing sentence here.")))
    inputs = tmp_path / "warc"
    inputs.mkdir()
    write_warc(inputs / "a.warc.gz", recs[: len(recs) // 2] + real_records())
    write_warc(inputs / "b.warc.gz", recs[len(recs) // 2:])
    write_warc(inputs / "c.wet.gz", wet_records())
    damaged = write_warc(tmp_path / "d.warc.gz", real_records(3)).read_bytes()
    (inputs / "d.warc.gz").write_bytes(damaged[:-30])
    return inputs, rows


def test_fineweb_recipe_from_warc(cli, tmp_path, monkeypatch, manifest_at):
    inputs, rows = _corpus(tmp_path)
    blocklist = tmp_path / "blocked.txt"
    blocklist.write_text("# UT1-style list\nblocked.example\n")
    monkeypatch.setenv("WARC", str(inputs))
    monkeypatch.setenv("URL_BLOCKLIST", str(blocklist))
    res = cli("validate", RECIPE)
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    res = cli("run", RECIPE, "--output", out, "-w", "2")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(out)
    steps = {s.op: s for s in manifest.steps}
    for s in manifest.steps:
        assert s.rows_in == s.rows_out + s.removed
    assert steps["read"].reasons == {"truncated": 1}
    assert steps["url_filter"].reasons == {"url_blocked_domain": 1}
    assert steps["extract_text"].reasons.get("no_text", 0) >= 1  # a real page without main text
    assert steps["language_id"].reasons.get("language_not_allowed", 0) >= 1
    assert steps["minhash_dedup"].removed >= 1
    assert steps["pii_redact"].counts.get("redacted_email", 0) >= 1

    data = pq.read_table(out / "data")
    assert "html" not in data.column_names and {"url", "warc_date", "text", "language"} <= set(data.column_names)
    urls = data.column("url").to_pylist()
    assert "https://blocked.example/page" not in urls and "https://de.example/seite" not in urls
    assert not {"https://copy.example/", rows[[r["planted"] for r in rows].index(None) + 2]["url"]} <= set(urls)
    texts = dict(zip(urls, data.column("text").to_pylist()))
    assert "jane.doe@example.org" not in texts["https://contact.example/"]
    assert "<EMAIL>" in texts["https://contact.example/"] and "<IP_ADDRESS>" in texts["https://contact.example/"]
    assert len(urls) >= 20
    trace = pq.read_table(out / "trace").to_pylist()
    [cut] = [t for t in trace if t["reason"] == "truncated"]
    assert cut["detail"].startswith(f"{inputs / 'd.warc.gz'}, offset ")
