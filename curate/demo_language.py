"""The synthetic language of the demo corpus (curate/demo.py): real English function words (Gopher's
stop words first) and a Zipf-distributed vocabulary of pronounceable pseudo-words, drawn in bulk
with numpy into capitalised sentences and paragraphs. Fixed, whatever the corpus's seed."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# Gopher's stop words come first: they are the most frequent words, as in English.
FUNCTION_WORDS = (
    "the of and to a in that is was he for it with as his on be at by this had not are but from or have "
    "an they which one you were her all she there would their we him been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two may then "
    "do first any my now such like our over man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how too "
    "little state good very make world still own see men work long get here between both life being "
    "under never day same another know while last might us great old year off come since against go "
    "came right used take three"
).split()
GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")

# Good documents: long-tailed lengths in words, median ~380. At least 100 words because in shorter
# texts four long words in a row can cover 16% of the characters, failing Gopher's top-4-gram rule.
_GOOD_WORDS = (100, 3000)
_GOOD_MEDIAN, _GOOD_SIGMA = 380, 0.85
_SENTENCE_END_P = 1 / 14
_COMMA_P = 0.05
_PARAGRAPH_P = 0.2  # of sentence ends
_QUESTION_P = 0.05  # of sentence ends
_TABLE_BITS = 22  # resolution of the Zipf sampling table

# Surface forms of a word: (suffix, capitalised); the form index of a token is punct * 2 + cap.
_SUFFIXES = (" ", ", ", ". ", ".\n\n", "? ")
_SPACE, _COMMA, _PERIOD, _PARAGRAPH, _QUESTION = range(5)


class Language:
    """A vocabulary with Zipf frequencies and every surface form of each word, for bulk sampling."""

    def __init__(self, words: list[str], zipf_s: float = 1.0):
        self.words = words
        self.size = len(words)
        probs = 1.0 / np.arange(1, self.size + 1) ** zipf_s
        cdf = np.cumsum(probs / probs.sum())
        quantiles = (np.arange(1 << _TABLE_BITS) + 0.5) / (1 << _TABLE_BITS)
        self.table = np.minimum(np.searchsorted(cdf, quantiles), self.size - 1).astype(np.int32)
        forms = [w.capitalize() + s if cap else w + s for s in _SUFFIXES for cap in (False, True) for w in words]
        self.surfaces = np.array(forms, dtype=object)
        self.surface_len = np.fromiter((len(f) for f in forms), dtype=np.int64, count=len(forms))
        # Word ids of the Gopher stop words, in GOPHER_STOP_WORDS order (None if the vocabulary lacks them).
        has_stop_words = set(GOPHER_STOP_WORDS) <= set(words)
        self.stop_ids = np.array([words.index(w) for w in GOPHER_STOP_WORDS]) if has_stop_words else None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.table[rng.integers(0, 1 << _TABLE_BITS, n)]

    def texts(self, rng: np.random.Generator, n_words: np.ndarray, avoid: np.ndarray | None = None) -> list[str]:
        """One text per entry of `n_words`: sentences and paragraphs of that many words.

        `avoid`: word ids never to use (they are replaced by words from the vocabulary's tail).
        """
        n_words = np.asarray(n_words, dtype=np.int64)
        if n_words.size == 0:
            return []
        total = int(n_words.sum())
        ids = self.sample(rng, total)
        if avoid is not None:
            bad = np.isin(ids, avoid)
            ids[bad] = rng.integers(self.size // 2, self.size, int(bad.sum()))
        last = np.cumsum(n_words) - 1
        ends = rng.random(total) < _SENTENCE_END_P
        commas = rng.random(total) < _COMMA_P
        if avoid is None and self.stop_ids is not None:
            self._ensure_stop_words(ids, ends, commas, last - n_words + 1, n_words)
        ends[last] = True
        cap = np.empty(total, dtype=np.int64)
        cap[0] = 1
        cap[1:] = ends[:-1]
        end_kind = rng.random(total)
        punct = np.where(
            ends,
            np.where(
                end_kind < _PARAGRAPH_P, _PARAGRAPH, np.where(end_kind < _PARAGRAPH_P + _QUESTION_P, _QUESTION, _PERIOD)
            ),
            np.where(commas, _COMMA, _SPACE),
        )
        surface = (punct * 2 + cap) * self.size + ids
        joined = "".join(self.surfaces[surface].tolist())
        stops = np.cumsum(self.surface_len[surface])[last]
        starts = np.concatenate(([0], stops[:-1]))
        return [joined[a:b].rstrip() for a, b in zip(starts.tolist(), stops.tolist())]

    def _ensure_stop_words(self, ids, ends, commas, first, n_words) -> None:
        """Make every text of >= 3 words use two Gopher stop words as bare words (lower case, no
        punctuation attached), as English does, so good documents pass that rule surely whatever the
        word splitter: a text that lacks them gets "of the" as its 2nd and 3rd words, mid-sentence."""
        stop = self.stop_ids
        assert stop is not None  # called only for a language that has them
        slot = np.full(self.size, -1)
        slot[stop] = np.arange(stop.size)
        doc = np.repeat(np.arange(n_words.size), n_words)
        # A word is lower case unless it starts a sentence; the first word of a text always does.
        lower = np.ones(ids.size, dtype=bool)
        lower[1:] = ~ends[:-1]
        lower[first] = False
        hit = (slot[ids] >= 0) & lower & ~ends & ~commas
        seen = np.zeros((n_words.size, stop.size), dtype=bool)
        seen[doc[hit], slot[ids[hit]]] = True
        fix = first[(seen.sum(axis=1) < 2) & (n_words >= 3)]
        ids[fix + 1], ids[fix + 2] = stop[GOPHER_STOP_WORDS.index("of")], stop[GOPHER_STOP_WORDS.index("the")]
        for i in (0, 1, 2):
            ends[fix + i] = commas[fix + i] = False


def _pseudo_words(rng: np.random.Generator, n: int, syllables: tuple[int, int]) -> list[str]:
    """`n` distinct pronounceable pseudo-words, shorter ones first (short words are the frequent ones)."""
    onsets = "b c d f g h l m n p r s t v w br cr dr st tr pl sh ch th gr".split() + [""]
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st"]
    suffixes = ["", "", "", "", "ing", "ed", "er", "ly", "tion", "ment", "ness", "al"]
    seen: set[str] = set(FUNCTION_WORDS)
    out: list[str] = []
    while len(out) < n:
        k = 4 * n
        count = rng.integers(syllables[0], syllables[1] + 1, k)
        parts = [
            rng.choice(onsets, (k, syllables[1])),
            rng.choice(vowels, (k, syllables[1])),
            rng.choice(codas, (k, syllables[1])),
        ]
        sfx = rng.choice(suffixes, k)
        for i in range(k):
            word = "".join(parts[0][i, j] + parts[1][i, j] + parts[2][i, j] for j in range(count[i])) + sfx[i]
            if word not in seen:
                seen.add(word)
                out.append(word)
                if len(out) == n:
                    break
    noise = rng.random(n)
    return [w for _, _, w in sorted(zip([len(w) for w in out], noise, out))]


@lru_cache(maxsize=1)
def languages() -> tuple[Language, Language]:
    """The corpus language and a long-word language (for `long_words`); fixed, independent of seed."""
    rng = np.random.default_rng(20240601)
    normal = Language(list(FUNCTION_WORDS) + _pseudo_words(rng, 30_000, (1, 3)))
    long = Language(_pseudo_words(rng, 5_000, (5, 7)))
    return normal, long


def good_lengths(rng: np.random.Generator, n: int) -> np.ndarray:
    lengths = rng.lognormal(np.log(_GOOD_MEDIAN), _GOOD_SIGMA, n)
    return np.clip(lengths, *_GOOD_WORDS).astype(np.int64)
