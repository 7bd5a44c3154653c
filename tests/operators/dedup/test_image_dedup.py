"""image_exact_dedup and phash_dedup on planted duplicates: the same pixels in other bytes,
resized and recompressed copies; phash_dedup's groups equal a brute-force oracle (every pair
within the distance, connected components, the best-ranked row of each kept), and its pHash
equals the imagehash package's algorithm, transcribed here."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings, strategies as st

from curate.errors import InputError
from curate_operators.dedup.image_exact_dedup import ImageExactDedup, ImageExactDedupParams
from curate_operators.dedup.image_hash import phash
from curate_operators.dedup.phash_dedup import PhashDedup, PhashDedupParams

Image = pytest.importorskip("PIL.Image")


def picture(seed: int, size=(96, 80)) -> "Image.Image":
    """A smooth random picture (low-frequency noise scaled up), so that pHash sees structure."""
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8))
    return small.resize(size, Image.BICUBIC)


def encode(img, fmt="PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def run(op, images, prefer=None):
    batch = pa.RecordBatch.from_pydict({"image": pa.array(images, pa.binary()),
                                        "_ord": pa.array(range(len(images)), pa.int64()),
                                        "_id": [f"r{i}" for i in range(len(images))],
                                        **({"q": prefer} if prefer is not None else {})})
    prepared = op.prepare(batch)
    for name, col in prepared.items():
        batch = batch.append_column(name, col)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as work:
        state = op.fit(iter([batch]), Path(work))
        return op.apply(batch, state)


def test_exact_on_pixels_and_on_bytes():
    img = picture(1)
    same_pixels = [encode(img, compress_level=1), encode(img, compress_level=9)]  # other bytes, same pixels
    assert same_pixels[0] != same_pixels[1]
    images = same_pixels + [same_pixels[0], encode(img, "JPEG", quality=90), encode(picture(2)), b"broken", b"broken",
                            None]
    v = run(ImageExactDedup(ImageExactDedupParams()), images)
    assert v.keep.tolist() == [True, False, False, True, True, True, False, True]
    detail = v.detail.to_pylist()
    assert detail[1] == detail[2] == "duplicate of r0" and detail[6] == "duplicate of r5"
    assert v.reason == "exact_duplicate"
    on_bytes = run(ImageExactDedup(ImageExactDedupParams(on="bytes")), images)
    assert on_bytes.keep.tolist() == [True, True, False, True, True, True, False, True]
    best = run(ImageExactDedup(ImageExactDedupParams(prefer="q")), images[:3], prefer=[0.1, 0.9, 0.5])
    assert best.keep.tolist() == [False, True, False]


def reference_phash(data: bytes) -> int:
    """imagehash.phash(image), transcribed: L, 32x32 Lanczos, scipy.fftpack dct on both axes,
    the top-left 8x8 above their median, read row by row as bits."""
    import scipy.fftpack

    image = Image.open(io.BytesIO(data)).convert("L").resize((32, 32), Image.LANCZOS)
    pixels = np.asarray(image)
    dct = scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=0), axis=1)
    low = dct[:8, :8]
    bits = (low > np.median(low)).flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def test_phash_is_imagehash_and_near_copies_are_close():
    base = picture(3, (200, 160))
    original = encode(base)
    assert phash(original) == reference_phash(original)
    copies = [encode(base.resize((100, 80), Image.LANCZOS)), encode(base, "JPEG", quality=40),
              encode(base.resize((300, 240)), "JPEG", quality=75)]
    others = [encode(picture(s, (200, 160))) for s in (4, 5, 6)]
    dist = lambda a, b: bin(phash(a) ^ phash(b)).count("1")  # noqa: E731
    assert all(dist(original, c) <= 4 for c in copies)
    assert all(dist(original, o) > 10 for o in others)
    v = run(PhashDedup(PhashDedupParams()), [original, *others, *copies, b"broken", None])
    assert v.keep.tolist() == [True] * 4 + [False] * 3 + [True, True]
    assert set(v.detail.to_pylist()[4:7]) == {"duplicate of r0"} and v.reason == "near_duplicate"


def oracle_keep(hashes, prefer, d):
    """Every pair within d bits joined, connected components by search; each keeps its best
    member (highest prefer, then first)."""
    n = len(hashes)
    rank = sorted(range(n), key=lambda i: (-prefer[i], i))
    seen, keep = set(), [False] * n
    for start in rank:
        if start in seen:
            continue
        keep[start] = True
        stack = [start]
        seen.add(start)
        while stack:
            i = stack.pop()
            for j in range(n):
                if j not in seen and bin(hashes[i] ^ hashes[j]).count("1") <= d:
                    seen.add(j)
                    stack.append(j)
    return keep


@settings(max_examples=40, deadline=None)
@given(seeds=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2**64 - 1)), min_size=1, max_size=40),
       d=st.integers(0, 6), prefer=st.lists(st.integers(0, 3), min_size=40, max_size=40))
@example(seeds=[(0, 0), (0, 2**64 - 1)], d=0, prefer=[0] * 40)
def test_phash_groups_equal_brute_force(seeds, d, prefer):
    """Hashes near a few centres (bits flipped) so that chains and groups form."""
    centres = [0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x0F0F0F0F0F0F0F0F, 0, 2**64 - 1, 0xAAAAAAAAAAAAAAAA]
    hashes = []
    for centre, noise in seeds:
        flips = [bit for bit in range(64) if (noise >> bit) & 1][: noise % 9]
        hashes.append(centres[centre] ^ sum(1 << b for b in flips))
    n = len(hashes)
    batch = pa.RecordBatch.from_pydict({"phash": pa.array(hashes, pa.uint64()), "_ord": pa.array(range(n), pa.int64()),
                                        "_id": [f"r{i}" for i in range(n)], "q": prefer[:n]})
    import tempfile
    from pathlib import Path

    op = PhashDedup(PhashDedupParams(max_distance=d, prefer="q"))
    with tempfile.TemporaryDirectory() as work:
        v = op.apply(batch, op.fit(iter([batch]), Path(work)))
    assert v.keep.tolist() == oracle_keep(hashes, prefer[:n], d)


@pytest.mark.parametrize("op", [ImageExactDedup(), PhashDedup()], ids=["exact", "phash"])
def test_an_image_column_that_is_not_bytes_is_named(op):
    with pytest.raises(InputError, match=f"{op.name}: image column 'image' must hold encoded image bytes .* it is string"):
        op.prepare(pa.RecordBatch.from_pydict({"image": ["a.jpg"]}))
