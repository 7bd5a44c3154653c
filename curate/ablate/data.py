"""One tokenizer for every arm (the `tokenize` operator's, so the ids are the ones a training
run of curate's output would get), the equal-token sample of each arm, and the held-out text.

The default tokenizer is byte-level and built here (no download): ids 0-255 are the bytes
(GPT-2's byte-to-character map, so it loads anywhere `tokenizers` does) and 256 is
`<|endoftext|>`, put after every document.

Held out: a document whose content key (xxhash64 of its text NFKC-normalized, case-folded, whitespace
collapsed) falls in the held-out share is never trained on, in any arm, and neither is a document
whose content key is an `--eval-text` document's.
The sample: the arm's documents in a seeded order, their ids (document + EOS) concatenated and cut
at exactly `tokens`; with `allow_repeat`, an arm that runs out starts again in a new order (epochs
counted). Each training seed trains on its own draw (another order), so the luck of the draw
(which documents, how much junk in them) is part of the seed-to-seed variation the paired test
weighs; with one sample for every seed, two arms of the same data would differ by their two
samples in every seed alike, and that difference would pass for one between the data.
The order is by a seeded hash of each document's content key and its occurrence (the n-th copy of
a text in the arm): a document gets the same place in every arm that holds it, at the same seed.
A recipe's output and its input then train, seed by seed, on the same documents wherever the
recipe kept them, and differ by what it removed or changed (what the comparison is about), not by
two unrelated draws of the documents both hold: the paired test's common random numbers. Arms with
no document in common get independent draws, as before; copies after the first are placed
independently, so a sample meets duplicates as often as a uniform draw does.
"""

from __future__ import annotations

import json
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import xxhash

from curate.errors import CurateError

EOS = "<|endoftext|>"
EOS_CANDIDATES = (EOS, "</s>", "<eos>", "<|end_of_text|>", "[SEP]")
HOLDOUT_BUCKETS = 1 << 20


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (what ByteLevel pre-tokenizers use)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def write_byte_tokenizer(path: Path) -> Path:
    """The default tokenizer as tokenizer.json at `path`: id = byte value, 256 = EOS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    chars = bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={chars[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOS])
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


@dataclass
class Tokens:
    """The tokenizer as the `tokenize` operator runs it, with an EOS after every document."""

    op: Any  # curate_operators.text.tokenize.Tokenize
    vocab: int
    eos_id: int
    where: str

    def encode(self, texts: list[str]) -> list[np.ndarray]:
        """Each text's ids without the EOS (the operator's ids, EOS removed)."""
        if not texts:
            return []
        batch = pa.record_batch({"text": pa.array(texts, pa.string())})
        ids = self.op.process(batch).column("input_ids")
        flat = ids.values.to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = ids.offsets.to_numpy()
        return [flat[offsets[i] : offsets[i + 1] - 1] for i in range(len(texts))]


def load_tokens(tokenizer: str | None, eos: str | None, out_dir: Path) -> Tokens:
    """The tokenizer (None: the byte-level default, written to out_dir/tokenizer.json), run by the
    `tokenize` operator (from the operator registry). A tokenizer that cannot load, or has no
    end-of-text token, is a CurateError naming it."""
    from curate import registry

    tokenize = registry.get("tokenize")
    if tokenizer is None:
        where, eos = str(write_byte_tokenizer(out_dir / "tokenizer.json")), EOS
    else:
        where = tokenizer
    op = _set_up(tokenize, where, eos)
    if eos is None:
        eos = next((t for t in EOS_CANDIDATES if op.tokenizer.token_to_id(t) is not None), None)
        if eos is None:
            raise CurateError(
                f"--tokenizer {tokenizer}: it has no end-of-text token "
                f"({', '.join(EOS_CANDIDATES)}); name the one to put between documents with --eos"
            )
        op = _set_up(tokenize, where, eos)
    vocab = op.tokenizer.get_vocab_size(with_added_tokens=True)
    return Tokens(op, vocab, op.eos_id, where)


def _set_up(tokenize, where: str, eos: str | None):
    """The tokenize operator on `where`, its tokenizer loaded (ids as int32, EOS after each text)."""
    op = tokenize(tokenize.Params(tokenizer=where, eos=eos, dtype="int32"))
    try:
        op.setup()
    except CurateError as e:
        raise CurateError(f"--tokenizer {where}: cannot load it ({e})") from None
    except Exception as e:  # noqa: BLE001 - a damaged tokenizer.json raises the library's errors
        raise CurateError(f"--tokenizer {where}: cannot load it ({type(e).__name__}: {e})") from None
    return op


def read_texts(paths: list[str], fmt: str | None, text_column: str, what: str) -> Iterator[str]:
    """The texts of every row of `paths` (a plain .txt file: its whole text is one document)."""
    from curate.io.readers import read_source
    from curate.io.sources import discover

    txt = [p for p in paths if Path(p).suffix == ".txt" and Path(p).is_file()]
    for p in txt:
        try:
            yield Path(p).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CurateError(f"{what}: cannot read {p}: {e}") from None
    rest = [p for p in paths if p not in txt]
    if not rest:
        return
    try:
        sources = discover(rest, fmt)
        for source in sources:
            for batch, _bad in read_source(source, on_bad_row="trace"):
                if batch is None:
                    continue
                if text_column not in batch.schema.names:
                    raise CurateError(
                        f"{what}: {source.path} has no column {text_column!r} "
                        f"(columns: {', '.join(batch.schema.names)}); choose one with --text-column"
                    )
                for t in batch.column(text_column).to_pylist():
                    if t:
                        yield t
    except CurateError as e:
        if str(e).startswith(what):
            raise
        raise CurateError(f"{what}: {e}") from None


def content_key(text: str) -> int:
    """The hash that decides holding out: of the text NFKC-normalized, case-folded and with its
    whitespace collapsed, so that a document and its normalized copy in another arm (a recipe's
    normalize_text, say) are held out together and never trained on by either."""
    return xxhash.xxh64_intdigest(" ".join(unicodedata.normalize("NFKC", text).casefold().split()).encode("utf-8"))


def is_held_out(text: str, share: float) -> bool:
    return _held_key(content_key(text), share)


def _held_key(key: int, share: float) -> bool:
    return key % HOLDOUT_BUCKETS < share * HOLDOUT_BUCKETS


def content_keys(texts: list[str]) -> np.ndarray:
    """content_key of every text (uint64), computed once per arm for all its draws."""
    return np.fromiter((content_key(t) for t in texts), np.uint64, count=len(texts))


def draw_order(keys: np.ndarray, seed: int, draw: int) -> np.ndarray:
    """The sampling order of documents with content `keys` (see the module doc): by the seeded hash
    of (key, occurrence), so that a document shared by two arms has the same rank in both."""
    seen: dict[int, int] = {}
    rank = np.empty(len(keys), np.uint64)
    for i, k in enumerate(keys.tolist()):
        n = seen.get(k, 0)
        seen[k] = n + 1
        rank[i] = xxhash.xxh64_intdigest(struct.pack("<QQqq", k, n, seed, draw))
    return np.argsort(rank, kind="stable")


@dataclass
class Sample:
    """An arm's training sample and held-out slice."""

    train: np.ndarray  # exactly `tokens` ids
    available: int | None  # training tokens the arm has (documents + EOS, held-out excluded); None: more
    # than the sample needed (not all counted)
    documents: int  # training documents the arm has
    epochs: float | None  # tokens / available (> 1 only with allow_repeat); None: under one (not all counted)
    held_out: list[str]  # held-out documents (in a seeded order)


def sample_arm(
    name: str,
    texts: list[str],
    tok: Tokens,
    tokens: int,
    seed: int,
    allow_repeat: bool,
    holdout: float,
    excluded: set[int],
    draw: int = 0,
    keys: np.ndarray | None = None,
) -> Sample:
    """Exactly `tokens` training ids of the arm's documents (see the module doc). `excluded`:
    xxhash64s of texts never trained on (the eval files'). `draw`: which of the seeded samples
    (training seed s trains on draw s, so that the seeds vary the documents too); the held-out
    documents and their order do not depend on it. `keys`: the texts' content_keys, if computed."""
    if keys is None:
        keys = content_keys(texts)
    keep, keep_keys, held = [], [], []
    for t, k in zip(texts, keys.tolist()):
        if _held_key(k, holdout) or k in excluded:
            held.append(t)
        else:
            keep.append(t)
            keep_keys.append(k)
    rng = np.random.default_rng([seed, 0x5A])
    held = [held[i] for i in rng.permutation(len(held))]
    rng = np.random.default_rng([seed, 0x5A, draw])  # the order of repeated epochs
    if not keep:
        raise CurateError(f"arm {name}: no documents to train on ({len(texts)} read, all held out)")
    order = draw_order(np.array(keep_keys, np.uint64), seed, draw)
    parts, got, chunk = [], 0, 256
    for start in range(0, len(order), chunk):  # documents tokenized in sample order, until enough
        ids = tok.encode([keep[i] for i in order[start : start + chunk]])
        for a in ids:
            parts.append(a)
            parts.append(np.array([tok.eos_id], np.int64))
            got += len(a) + 1
        if got >= tokens and not allow_repeat:
            break
    if got < tokens and not allow_repeat:
        raise CurateError(
            f"arm {name} has {got:,} training tokens, fewer than --tokens {tokens:,} "
            f"(use --allow-repeat to train on it more than once, or fewer --tokens)"
        )
    complete = len(parts) // 2 == len(keep)  # every document tokenized: `got` is all the arm has
    available = got if complete else None
    docs = [np.concatenate([parts[i], parts[i + 1]]) for i in range(0, len(parts), 2)]
    while got < tokens:  # allow_repeat: another epoch, in a new order
        for i in rng.permutation(len(docs)):
            parts.append(docs[i])
            got += len(docs[i])
            if got >= tokens:
                break
    train = np.concatenate(parts)[:tokens]
    epochs = tokens / available if available else None
    return Sample(train, available, len(keep), epochs, held)


def write_sample(sample: Sample, path: Path, meta: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    np.save(path / "tokens.npy", sample.train.astype(np.int32))
    (path / "sample.json").write_text(json.dumps(meta, indent=2))
