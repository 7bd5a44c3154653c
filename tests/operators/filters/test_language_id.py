import pyarrow as pa
import pytest
from pydantic import ValidationError

from curate.errors import RecipeError
from operators.filters.language_id import LanguageId
from tests.operators.filters.udhr import udhr_sample

pytest.importorskip("py3langid")
pytest.importorskip("gflanguages")


def op(**params):
    o = LanguageId(LanguageId.Params(**params))
    o.setup()
    return o


def batch(texts):
    return pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())})


@pytest.fixture(scope="module")
def sample():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return udhr_sample(set(LanguageIdentifier.from_model_file(MODEL_FILE).nb_classes))


def test_accuracy_on_real_udhr_translations(sample):
    out = op().process(batch([t for _, t in sample]))
    found = out.column("language").to_pylist()
    right = sum(f == code for f, (code, _) in zip(found, sample))
    assert len(sample) > 100
    assert right / len(sample) >= 0.95  # bench/bench_language_id.py reports the misses
    scores = out.column("language_score").to_pylist()
    assert all(0 <= s <= 1 for s in scores)


def test_languages_and_thresholds_filter_with_reasons(sample):
    texts = dict(sample)
    o = op(languages=["de", "fr"], min_score={"de": 0.5, "default": 1.0})
    out, v = o.process(batch([texts["de"], texts["fr"], texts["en"]]))
    assert v.keep.tolist() == [True, False, False]
    assert v.reason.to_pylist()[1:] == ["language_low_score", "language_not_allowed"]
    assert v.detail[2].as_py().startswith("language=en score=")
    assert out.column("language").to_pylist() == ["de", "fr", "en"]


def test_annotates_only_without_languages_or_bounds():
    out = op().process(batch(["Das ist ein kleiner Satz auf Deutsch, über das Wetter.", None]))
    assert isinstance(out, pa.RecordBatch)
    assert out.column("language")[0].as_py() == "de"


def test_candidates_restrict_the_classifier(sample):
    texts = dict(sample)
    out = op(candidates=["es", "pt"]).process(batch([texts["de"]]))
    assert out.column("language")[0].as_py() in {"es", "pt"}
    with pytest.raises(RecipeError):
        op(candidates=["xx-unknown"])


def test_params_are_checked():
    with pytest.raises(ValidationError):
        LanguageId.Params(backend="fasttext")
    with pytest.raises(ValidationError):
        LanguageId.Params(min_score={"en": 2})
    with pytest.raises(ValidationError, match="candidates"):
        LanguageId.Params(backend="fasttext", model_path="lid.bin", candidates=["en"])


def test_fasttext_backend_with_a_user_model(tmp_path, sample):
    fasttext = pytest.importorskip("fasttext")
    texts = dict(sample)
    train = tmp_path / "train.txt"
    with open(train, "w") as f:
        for code in ("de", "fr", "es"):
            for sentence in texts[code].replace("\n", " ").split(". "):
                f.write(f"__label__{code} {sentence}\n" * 20)
    model = fasttext.train_supervised(str(train), epoch=20, minn=2, maxn=4, dim=16, verbose=0)
    model.save_model(str(tmp_path / "lid.bin"))
    o = op(backend="fasttext", model_path=str(tmp_path / "lid.bin"), languages=["de"])
    out, v = o.process(batch([texts["de"], texts["fr"]]))
    assert out.column("language").to_pylist() == ["de", "fr"]
    assert v.keep.tolist() == [True, False]
    with pytest.raises(RecipeError):
        op(backend="fasttext", model_path=str(tmp_path / "missing.bin"))
