"""The lean S3 listing (s3_listing.py) finds the objects s3fs's find finds, with the same names,
sizes and ETags (so the same fingerprints), across pages and subprefixes listed at once; its
pages alone are parsed lean, every other request of the same client as before."""

from urllib.parse import quote_plus
from xml.etree import ElementTree

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.io import listing, s3_listing, store
from curate.io.sources import discover
from tests.curate.io import motokit
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)

NS = "http://s3.amazonaws.com/doc/2006-03-01/"


@pytest.fixture
def s3(monkeypatch, s3_server):
    client = motokit.use(monkeypatch, s3_server, "lst")
    yield client
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="lst"):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket="lst", Key=obj["Key"])
    client.delete_bucket(Bucket="lst")


def _page(objects, prefixes, token, encoded) -> bytes:
    """A ListObjectsV2 answer, its keys URL-encoded as S3 does when botocore asks (EncodingType=url)."""
    code = quote_plus if encoded else str
    root = ElementTree.Element(f"{{{NS}}}ListBucketResult")
    if encoded:
        ElementTree.SubElement(root, f"{{{NS}}}EncodingType").text = "url"
    ElementTree.SubElement(root, f"{{{NS}}}IsTruncated").text = "true" if token else "false"
    for key, size, etag in objects:
        c = ElementTree.SubElement(root, f"{{{NS}}}Contents")
        for tag, value in (("Key", code(key)), ("LastModified", "2026-11-24T12:00:00.000Z"), ("ETag", etag),
                           ("Size", str(size)), ("StorageClass", "STANDARD")):
            ElementTree.SubElement(c, f"{{{NS}}}{tag}").text = value
    for p in prefixes:
        ElementTree.SubElement(ElementTree.SubElement(root, f"{{{NS}}}CommonPrefixes"), f"{{{NS}}}Prefix").text = code(p)
    if token:
        ElementTree.SubElement(root, f"{{{NS}}}NextContinuationToken").text = token
    return ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8")


# what XML 1.0 can carry (no control characters, surrogates or noncharacters such as U+FFFE)
KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn")), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(objects=st.lists(st.tuples(KEYS, st.integers(0, 2 ** 50), st.text("0123456789abcdef-\"", max_size=36))),
       prefixes=st.lists(KEYS, max_size=5), token=st.none() | st.text("abcXYZ0123+/=", min_size=1, max_size=20),
       encoded=st.booleans())
@example(objects=[], prefixes=[], token=None, encoded=False)  # an empty prefix
@example(objects=[('a & <b> "c" +%.jsonl', 0, '"d41d8cd98f00b204e9800998ecf8427e"')], prefixes=["k=1/"], token="t",
         encoded=True)
def test_a_page_gives_its_keys_sizes_etags_subprefixes_and_next_token(objects, prefixes, token, encoded):
    assert s3_listing.parse_page(ElementTree.fromstring(_page(objects, prefixes, token, encoded))) == (objects, prefixes, token)


def test_it_finds_what_s3fs_finds_with_the_same_sizes_and_versions(s3, monkeypatch):
    import s3fs

    keys = [f"d/{i % 3}/{'k=1/' if i % 2 else ''}obj {i:03d}+.jsonl" for i in range(230)] + ["d/top.jsonl"]
    for i, key in enumerate(keys):
        s3.put_object(Bucket="lst", Key=key, Body=b"x" * (i % 7))
    s3.put_object(Bucket="lst", Key="d/1/", Body=b"")  # a console's "folder": no data
    monkeypatch.setattr(store, "REQUESTS_IN_FLIGHT", 2)  # split one level, then pages of 50 keys
    monkeypatch.setattr(s3_listing, "PAGE_KEYS", 50)
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    expected = {k: v for k, v in fs.find("lst/d", detail=True).items() if not k.endswith("/")}
    found = listing.find_all(fs, "lst/d")
    assert found.keys() == expected.keys() == {f"lst/{k}" for k in keys}
    assert all(found[k]["size"] == v["size"] and store.version(found[k]) == store.version(v) != ""
               for k, v in expected.items())
    sources = discover("s3://lst/d")
    assert [s.name for s in sources][:2] == ["0/k=1/obj 003+.jsonl", "0/k=1/obj 009+.jsonl"]
    assert len(sources) == len(keys)


def test_the_same_clients_other_listings_are_parsed_as_before(s3):
    import s3fs

    s3.put_object(Bucket="lst", Key="e/a.jsonl", Body=b"x")
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    assert list(listing.find_all(fs, "lst/e")) == ["lst/e/a.jsonl"]
    fs.invalidate_cache()
    [entry] = fs.ls("lst/e", detail=True)  # s3fs's own request, after the lean hook is on its client
    assert entry["name"] == "lst/e/a.jsonl" and entry["LastModified"].year > 2000


def test_each_lean_page_is_parsed_once(s3, monkeypatch):
    import s3fs

    for i in range(5):
        s3.put_object(Bucket="lst", Key=f"f/{i}.jsonl", Body=b"x")
    fed = []

    class Counting(ElementTree.XMLParser):  # botocore's parses and ElementTree.fromstring's
        def feed(self, data):
            fed.append(data)
            return super().feed(data)

    monkeypatch.setattr(ElementTree, "XMLParser", Counting)
    monkeypatch.setattr(s3_listing, "PAGE_KEYS", 2)
    assert len(listing.find_all(s3fs.S3FileSystem(skip_instance_cache=True), "lst/f")) == 5
    assert len([data for data in fed if b"<Contents>" in data]) == 3  # 3 pages of at most 2 keys


class _Operation:  # what botocore hands a before-parse handler: the operation's model
    def __init__(self, name: str):
        self.name = name


def _before_parse(body: bytes, lean: bool = True, operation: str = "ListObjectsV2", check=None):
    """`_before_parse` on a 200 answer with `body`: the answer and the page set aside, as it left them."""
    answer, page = {"status_code": 200, "body": body, "headers": {}}, {}
    token = s3_listing._LEAN.set(lean)
    try:
        s3_listing._before_parse(check, answer, page, _Operation(operation))
    finally:
        s3_listing._LEAN.reset(token)
    return answer, page


ERROR = b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>x</Message></Error>'
PAGE = _page([("a.jsonl", 1, '"e"')], [], None, False)


@pytest.mark.parametrize("body", [ERROR, PAGE[:len(PAGE) // 2]], ids=["an error inside a 200", "a page cut short"])
def test_a_lean_answer_that_is_no_page_is_a_500_to_botocore_as_its_own_look_would_make_it(body):
    answer, page = _before_parse(body)
    assert answer["status_code"] == 500 and answer["body"] == body and page == {}


def test_a_lean_page_is_set_aside_and_botocore_parses_an_empty_result():
    answer, page = _before_parse(PAGE)
    assert answer["status_code"] == 200 and answer["body"] == s3_listing._EMPTY
    assert page == {s3_listing._PAGE: ([("a.jsonl", 1, '"e"')], [], None)}


@pytest.mark.parametrize("lean, operation", [(False, "ListObjectsV2"), (True, "GetObject")])
def test_any_other_answer_is_left_to_botocores_own_look(lean, operation):
    seen = []
    answer, page = _before_parse(ERROR, lean, operation, check=lambda **kw: seen.append(kw))
    assert answer == {"status_code": 200, "body": ERROR, "headers": {}} and page == {}
    assert [kw["operation_model"].name for kw in seen] == [operation]
