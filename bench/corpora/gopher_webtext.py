"""Synthetic web-like documents for the Gopher benchmark (no datasets can be downloaded here).

Most documents are clean prose (~3-5 KB, Zipf word frequencies, paragraphs), some are
borderline (a pull quote repeated, a page of 30-90 words); the rest mimic the kinds of crawl
pages Gopher's rules exist to remove: navigation menus, keyword spam,
repeated boilerplate, hashtag lists, truncated teasers, tables of numbers, non-English text
and stubs. The mix is seeded, so every run sees the same documents.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import numpy as np

_COMMON = (
    "the of and to a in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no will "
    "more about can said them what out up some into only other time new could these two may first "
    "then do any like my now over such our man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how "
    "too little state good very make world still own see men work long get here between both life "
    "being under never day same another know while last might us great old year off come since "
    "against go came right used take three"
).split()
_SYLLABLES = "ka ri to men sa la ver con di na tion pro ex ter ble ing com pe ra lo ment ish an tre vi".split()


def _content_words(rng: np.random.Generator, n: int) -> list[str]:
    """Made-up content words of 2-5 syllables: a vocabulary large enough for natural n-gram statistics."""
    words = {"".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 6)))) for _ in range(n * 2)}
    return sorted(words)[:n]


_NAV = ["Home", "About us", "Contact", "Blog", "Shop", "Login", "Register", "Privacy Policy", "Terms", "FAQ"]
_FOREIGN = "der die und das ist nicht mit sich auf für von dem den ein eine zu im werden auch als".split()


def _sentence(rng: np.random.Generator, vocab: list[str], zipf: np.ndarray) -> str:
    words = [vocab[i] for i in rng.choice(len(vocab), size=int(rng.integers(6, 22)), p=zipf).tolist()]
    words[0] = words[0].capitalize()
    if rng.random() < 0.3:
        words.insert(int(rng.integers(1, len(words))), f"{int(rng.integers(1, 2030))},")
    return " ".join(words) + str(rng.choice([".", ".", ".", "?", "!"]))


def _prose(rng: np.random.Generator, n_chars: int, vocab: list[str], zipf: np.ndarray) -> str:
    paragraphs, size = [], 0
    while size < n_chars:
        para = " ".join(_sentence(rng, vocab, zipf) for _ in range(int(rng.integers(2, 7))))
        paragraphs.append(para)
        size += len(para) + 2
    return "\n\n".join(paragraphs)


def make_documents(n: int, seed: int = 0) -> list[str]:
    """`n` documents: ~62% clean prose, ~8% borderline (pull quotes, short pages), the rest spread
    over the failure kinds above."""
    rng = np.random.default_rng(seed)
    content = _content_words(rng, 3000)
    vocab = _COMMON + content
    # Function words take over half of the tokens (as in English), content words the rest.
    common = 1 / np.arange(1, len(_COMMON) + 1)
    rare = 1 / np.arange(1, len(content) + 1) ** 0.8
    zipf = np.concatenate([0.6 * common / common.sum(), 0.4 * rare / rare.sum()])
    docs = []
    for _ in range(n):
        size = int(rng.integers(3000, 5000))
        kind = rng.random()
        body = _prose(rng, size, vocab, zipf)
        if kind < 0.62:
            doc = body
        elif kind < 0.67:  # a pull quote: one sentence of the text repeated a few times
            sentences = body.split(". ")
            quote = max(sentences[:6], key=len)
            doc = body.replace("\n\n", f"\n\n{quote}.\n\n", int(rng.integers(1, 4)))
        elif kind < 0.70:  # a short page, near the 50-word bound
            doc = " ".join(body.split()[: int(rng.integers(30, 90))])
        elif kind < 0.74:  # navigation menu around a short text
            nav = "\n".join(f"- {x}" for x in _NAV)
            doc = f"{nav}\n\n{body[:600]}\n\n{nav}"
        elif kind < 0.78:  # keyword spam
            doc = " ".join(str(rng.choice(content[:8])) for _ in range(size // 7))
        elif kind < 0.83:  # boilerplate repeated between paragraphs
            lines = body.split("\n\n")
            doc = "\n\n".join(p + "\n\nSubscribe to our newsletter for the latest updates and offers!" for p in lines)
        elif kind < 0.86:  # hashtag list
            doc = body[:1500] + "\n" + " ".join(f"#{w}" for w in rng.choice(content, size=200))
        elif kind < 0.89:  # teaser lines cut with an ellipsis
            doc = "\n".join(s[: int(rng.integers(40, 90))] + "..." for s in body.split(". ")[:40])
        elif kind < 0.92:  # numeric table
            doc = "\n".join(" | ".join(f"{x:.2f}" for x in rng.random(8) * 1000) for _ in range(60))
        elif kind < 0.95:  # non-English text
            doc = _prose(rng, size, _FOREIGN, np.full(len(_FOREIGN), 1 / len(_FOREIGN)))
        elif kind < 0.97:  # stub
            doc = body[: int(rng.integers(50, 250))]
        else:  # a long passage pasted twice
            doc = body + "\n\n" + body[: len(body) // 2]
        docs.append(doc)
    return docs
