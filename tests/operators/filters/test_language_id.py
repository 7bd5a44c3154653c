import pyarrow as pa
import pytest
from pydantic import ValidationError

from curate.errors import RecipeError
from curate_operators.filters.language_id import LanguageId
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
    assert right / len(sample) >= 0.95  # bench/sections/language_id.py reports the misses
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
    with pytest.raises(ValidationError, match="unknown language code 'xx-unknown'"):
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


def test_the_static_code_list_is_py3langids_label_set():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from curate_operators.filters.language_codes import LANGID, LID176, NAMES

    assert LANGID == set(LanguageIdentifier.from_model_file(MODEL_FILE).nb_classes)
    assert len(LID176) == 176  # fastText's lid.176: no model here to compare with, so its count
    assert set(NAMES) == LANGID | LID176


@pytest.mark.parametrize("value, expected", [
    ("english", "'english': not among the ISO 639 codes py3langid gives; did you mean en (English)?"),
    ("French", "did you mean fr (French)?"),
    ("Deutsch", "did you mean de (German)?"),
    ("eng", "did you mean en (English)?"),
    ("spa", "did you mean es (Spanish)?"),
    ("englsh", "did you mean en (English)?"),
    ("xx", "'xx': not among the ISO 639 codes py3langid gives. Codes: ace, af, am,"),
])
def test_unknown_language_codes_are_refused_at_recipe_load(value, expected):
    # `languages: [english]` passed validation, and the run then removed every row.
    from curate import recipe

    text = f"input: {{path: in.jsonl}}\noutput: {{path: out}}\nsteps:\n  - language_id: {{languages: [de, {value}]}}\n"
    with pytest.raises(RecipeError) as e:
        recipe.load(text=text)
    assert e.value.where == "steps[0].language_id.languages"
    assert expected in e.value.message


def test_bounds_and_candidates_name_known_codes_too():
    with pytest.raises(ValidationError, match="'english'.*did you mean en"):
        LanguageId.Params(min_score={"english": 0.5, "default": 0.2})
    with pytest.raises(ValidationError, match="'Spanish'.*did you mean es"):
        LanguageId.Params(candidates=["Spanish"])
    assert LanguageId.Params(languages=["en", "yue", "zxx"], min_score={"en": 0.6, "default": 0.1})
    assert LanguageId.Params(languages=["en"], min_score=0.65).min_score == 0.65  # one bound for all


def test_fasttext_codes_are_lid176s_or_a_models_language_and_script():
    ft = dict(backend="fasttext", model_path="lid.176.bin")
    assert LanguageId.Params(**ft, languages=["en", "ceb", "war", "eng_Latn", "cmn_Hani"])
    with pytest.raises(ValidationError, match="'ace': not among the ISO 639 codes fastText's lid.176 gives"):
        LanguageId.Params(**ft, languages=["ace"])  # py3langid knows Achinese, lid.176 does not
    with pytest.raises(ValidationError, match="'english'.*did you mean en"):
        LanguageId.Params(**ft, languages=["english"])
