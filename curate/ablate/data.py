"""One tokenizer for every arm (the `tokenize` operator's, so the ids are the ones a training
run of curate's output would get), the equal-token sample of each arm, and the held-out text.

The default tokenizer is byte-level and built here (no download): ids 0-255 are the bytes
(GPT-2's byte-to-character map, so it loads anywhere `tokenizers` does) and 256 is
`<|endoftext|>`, put after every document.

Held out: a document whose content key (xxhash64 of its text NFKC-normalized, case-folded, whitespace
collapsed) falls in the held-out share is never trained on, in any arm, and neither is a document
whose content key is an `--eval-text` document's.
The sample: the arm's documents in a seeded order (numpy PCG64, `sample_seed` and the training
seed: each seed trains on its own sample, the same seed of every arm on that arm's sample of the
same draw), their ids (document + EOS) concatenated and cut at exactly `tokens`; with
`allow_repeat`, an arm that runs out starts again in a new order (epochs counted). A new sample per
seed puts the luck of the draw (which documents, how much junk in them) into the seed-to-seed
variation the paired test weighs; with one sample for every seed, two arms of the same data differ
by their two samples in every seed alike, and that difference would pass for one between the data.
"""

from __future__ import annotations

import json
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
    return content_key(text) % HOLDOUT_BUCKETS < share * HOLDOUT_BUCKETS


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
) -> Sample:
    """Exactly `tokens` training ids of the arm's documents (see the module doc). `excluded`:
    xxhash64s of texts never trained on (the eval files'). `draw`: which of the seeded samples
    (training seed s trains on draw s, so that the seeds vary the documents too); the held-out
    documents and their order do not depend on it."""
    keep, held = [], []
    for t in texts:
        if is_held_out(t, holdout) or content_key(t) in excluded:
            held.append(t)
        else:
            keep.append(t)
    rng = np.random.default_rng([seed, 0x5A])
    held = [held[i] for i in rng.permutation(len(held))]
    if draw:
        rng = np.random.default_rng([seed, 0x5A, draw])
    if not keep:
        raise CurateError(f"arm {name}: no documents to train on ({len(texts)} read, all held out)")
    order = rng.permutation(len(keep))
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
