"""A mixed-language sample of real text: article 1 of the Universal Declaration of Human Rights in
every language that gflanguages (Google Fonts' language data, a PyPI package) carries a translation
for. Shared by the language_id tests and bench/sections/language_id.py.

One text per language: the entry of its most-spoken script (largest population, then id order),
historical scripts left out, so each language appears in the script it is written in today.
"""

from __future__ import annotations


def udhr_sample(known: set[str] | None = None) -> list[tuple[str, str]]:
    """(language code, text) pairs, for the languages in `known` (all when None)."""
    import gflanguages

    best: dict[str, object] = {}
    for key, lang in sorted(gflanguages.LoadLanguages().items()):
        text = lang.sample_text.specimen_36
        if not text or lang.historical or (known is not None and lang.language not in known):
            continue
        if lang.language not in best or lang.population > best[lang.language].population:
            best[lang.language] = lang
    return [(code, lang.sample_text.specimen_36) for code, lang in sorted(best.items())]
