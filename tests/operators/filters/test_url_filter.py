import pyarrow as pa
import pytest

from curate.errors import InputError, RecipeError
from curate_operators.filters.url_filter import UrlFilter, host_of


@pytest.fixture
def lists(tmp_path):
    def write(name, *lines):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        return str(path)
    return write


def run(urls, **params):
    op = UrlFilter(UrlFilter.Params(**params))
    op.setup()
    return op.keep(pa.RecordBatch.from_pydict({"url": pa.array(urls, pa.string())}))


def test_domains_suffixes_and_substrings(lists):
    block = {"domains": lists("d.txt", "# spam hosts", "spam.example", "Ads.Example.org  # upper case"),
             "suffixes": lists("s.txt", "casino.test"),
             "substrings": lists("w.txt", "/wp-login")}
    urls = ["https://www.spam.example/page", "http://sub.spam.example/", "https://ads.example.org:8080/x",
            "https://a.b.casino.test/win", "https://notcasino.test/", "https://blog.example/wp-login.php",
            "https://fine.example/article", None]
    v = run(urls, block=block)
    assert v.keep.tolist() == [False, True, False, False, True, False, True, True]
    assert v.reason.to_pylist()[:6] == ["url_blocked_domain", None, "url_blocked_domain", "url_blocked_suffix",
                                        None, "url_blocked_substring"]
    assert v.detail[3].as_py() == "host=a.b.casino.test"


def test_allow_lists_win_and_only_allowed_removes_the_rest(lists):
    block = {"suffixes": lists("s.txt", "example.com")}
    allow = {"domains": lists("a.txt", "docs.example.com")}
    urls = ["https://docs.example.com/a", "https://shop.example.com/b", "https://other.org/"]
    assert run(urls, block=block, allow=allow).keep.tolist() == [True, False, True]
    v = run(urls, allow=allow, only_allowed=True)
    assert v.keep.tolist() == [True, False, False]
    assert v.reason.to_pylist()[1:] == ["url_not_allowed"] * 2


def test_missing_urls_stay_unless_asked(lists):
    block = {"domains": lists("d.txt", "x.test")}
    assert run([None, ""], block=block).keep.tolist() == [True, True]
    v = run([None, " "], block=block, drop_missing=True)
    assert v.reason.to_pylist() == ["url_missing", "url_missing"]


def test_configuration_errors(lists, tmp_path):
    with pytest.raises(RecipeError, match="no block list"):
        run(["https://a.test"])
    with pytest.raises(RecipeError, match="remove every row"):
        run(["https://a.test"], only_allowed=True)
    with pytest.raises(RecipeError, match="does not exist"):
        run(["https://a.test"], block={"domains": str(tmp_path / "missing.txt")})
    op = UrlFilter(UrlFilter.Params(block={"domains": lists("d.txt", "a.test")}))
    with pytest.raises(InputError, match="must be text"):
        op.keep(pa.RecordBatch.from_pydict({"url": [1]}))


def test_host_of_handles_bare_hosts_ports_users_and_garbage():
    assert host_of("example.com/path") == "example.com"
    assert host_of("https://user:pw@Example.com.:443/") == "example.com"
    assert host_of("http://[::1") == ""
