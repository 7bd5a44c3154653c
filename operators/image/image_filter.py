"""image_filter: drop images that do not decode, are too small, too large or too elongated, too
few or too many bytes, of other formats, or whose caption is too short.

Width and height come from the metadata columns when the batch has them (img2dataset's
`original_width` / `original_height` by default: the size before any resize, what DataComp's
rules read), else from the image header (Pillow reads the header only, no pixel decode), unless
`decodable` asks for a full decode, which then also gives the size. A row whose metadata is null
(a WebDataset sample without its KEY.json) takes its size from its image's header. The image
column is needed only by the rules that read the image (`decodable`, bytes, formats) and by the
size rules on input without the metadata columns: DataComp's own metadata Parquet (uid, text,
original_width, original_height) runs `preset: datacomp_basic` without any image. The first rule a row fails
names its trace reason (`image_undecodable`, `image_too_small`, `image_too_large`,
`image_aspect_ratio`, `image_bytes`, `image_format`, `caption_too_short`); an undecodable image of a
WebDataset sample is named by its key, tar and member.

`preset: datacomp_basic` is DataComp's basic filter (mlfoundations/datacomp apply_filter.py) less
its English rule: min(w, h) >= 200, max(w, h) / min(w, h) <= 3.0, a caption of more than 2 words
(`len(text.split()) > 2`) and more than 5 characters. The English rule is a `language_id` step
before it (`languages: [en]`; DataComp used fastText lid.176: give its model file). Parameters
given beside the preset replace its values.
"""

from __future__ import annotations

import io
from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.errors import RecipeError
from curate.ops import Filter, Params, Verdict
from curate_operators.embed.images import image_name

DATACOMP_BASIC = {"min_side": 200, "max_aspect_ratio": 3.0, "min_caption_words": 3, "min_caption_chars": 6}


class ImageFilterParams(Params):
    preset: Literal["datacomp_basic"] | None = Field(None, description="datacomp_basic: DataComp's basic filter "
                                                                       "(less its English rule: see the doc).")
    image_column: str = Field("image", description="Encoded image bytes: read by decodable, the byte and format "
                                                    "rules, and the size rules where the metadata is missing.")
    caption_column: str | None = Field(None, description="The caption for the caption rules; default: the recipe's "
                                                         "input.text_column.")
    width_column: str = Field("original_width", description="Width metadata, used when the batch has it.")
    height_column: str = Field("original_height", description="Height metadata, used when the batch has it.")
    decodable: bool = Field(False, description="Decode every image fully (Pillow); drop those that fail.")
    min_side: int | None = Field(None, ge=1, description="Keep min(width, height) >= this.")
    max_side: int | None = Field(None, ge=1, description="Keep max(width, height) <= this.")
    max_aspect_ratio: float | None = Field(None, ge=1, description="Keep max(w, h) / min(w, h) <= this.")
    min_bytes: int | None = Field(None, ge=0, description="Keep encoded images of at least this many bytes.")
    max_bytes: int | None = Field(None, ge=1, description="Keep encoded images of at most this many bytes.")
    formats: list[Literal["jpeg", "png", "webp", "gif", "bmp", "tiff"]] | None = Field(
        None, description="Keep images of these formats (from the header).")
    min_caption_words: int | None = Field(None, ge=0, description="Keep captions of at least this many "
                                                                  "whitespace-separated words.")
    min_caption_chars: int | None = Field(None, ge=0, description="Keep captions of at least this many characters.")


def _header(data: bytes) -> tuple[int, int, str] | None:
    """(width, height, format) from the header, or None when Pillow cannot identify it."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.size[0], img.size[1], (img.format or "").lower()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None


def _decodes(data: bytes) -> bool:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
        return True
    except Exception:  # noqa: BLE001: any failure to decode is what this rule looks for
        return False


class ImageFilter(Filter):
    """Image size, shape, bytes, format and decodability; caption length; DataComp's basic filter as a preset."""

    name = "image_filter"
    Params = ImageFilterParams

    def computed_requires(self) -> tuple[str, ...]:
        rules = self.rules
        needs_caption = rules["min_caption_words"] is not None or rules["min_caption_chars"] is not None
        needs_image = rules["decodable"] or any(rules[k] is not None for k in ("min_bytes", "max_bytes", "formats"))
        return (((self.params.image_column,) if needs_image else ())
                + ((self.params.caption_column or self.text_column,) if needs_caption else ()))

    @property
    def _needs_size(self) -> bool:
        return any(self.rules[k] is not None for k in ("min_side", "max_side", "max_aspect_ratio"))

    def check_schema(self, schema: pa.Schema) -> None:
        p = self.params
        if not self._needs_size or p.image_column in schema.names:
            return
        missing = [c for c in (p.width_column, p.height_column) if c not in schema.names]
        if missing:
            raise RecipeError("image_column", f"the size rules read width and height from columns "
                                              f"'{p.width_column}' and '{p.height_column}', else from the images in "
                                              f"column '{p.image_column}'; the input has neither (columns are: "
                                              f"{', '.join(schema.names)})")

    def columns_read(self) -> tuple[str, ...]:
        extra = (self.params.width_column, self.params.height_column) if self._needs_size else ()
        return tuple(dict.fromkeys((*self.requires, *extra)))

    @property
    def rules(self) -> dict:
        p = self.params
        values = {name: getattr(p, name) for name in ("decodable", "min_side", "max_side", "max_aspect_ratio",
                                                      "min_bytes", "max_bytes", "formats", "min_caption_words",
                                                      "min_caption_chars")}
        if p.preset == "datacomp_basic":
            values.update({k: v for k, v in DATACOMP_BASIC.items() if k not in p.model_fields_set})
        return values

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        r = self.rules
        n = batch.num_rows
        reasons = np.full(n, None, dtype=object)
        details = np.full(n, None, dtype=object)

        def fail(mask: np.ndarray, reason: str, detail) -> None:
            new = mask & (reasons == None)  # noqa: E711: the first rule a row fails names it
            reasons[new] = reason
            details[new] = [detail(i) for i in np.flatnonzero(new)]

        if r["min_caption_words"] is not None or r["min_caption_chars"] is not None:
            captions = batch.column(self.params.caption_column or self.text_column).to_pylist()
            words = np.array([len(c.split()) if c else 0 for c in captions])
            chars = np.array([len(c) if c else 0 for c in captions])
            short = np.zeros(n, dtype=bool)
            if r["min_caption_words"] is not None:
                short |= words < r["min_caption_words"]
            if r["min_caption_chars"] is not None:
                short |= chars < r["min_caption_chars"]
            fail(short, "caption_too_short", lambda i: f"{words[i]} words, {chars[i]} characters")
        has_image = self.params.image_column in batch.schema.names
        images = batch.column(self.params.image_column).to_pylist() if has_image else [None] * n
        sizes = np.array([len(b) if b is not None else 0 for b in images])
        needs_size = self._needs_size
        has_meta = self.params.width_column in batch.schema.names and self.params.height_column in batch.schema.names
        headers = [None] * n
        if r["formats"] is not None or (needs_size and not has_meta) or r["decodable"]:
            headers = [_header(b) if b is not None else None for b in images]
        if r["decodable"]:
            bad = np.array([h is None or not _decodes(b) for h, b in zip(headers, images)])
            fail(bad, "image_undecodable", lambda i: f"{image_name(batch, i)} does not decode")
        if has_meta:
            width = np.array(batch.column(self.params.width_column).to_pylist(), dtype=object)
            height = np.array(batch.column(self.params.height_column).to_pylist(), dtype=object)
            if needs_size:  # null metadata (a WebDataset sample without its KEY.json): the image's header
                for i in np.flatnonzero([w is None or h is None for w, h in zip(width, height)]):
                    if headers[i] is None and images[i] is not None:
                        headers[i] = _header(images[i])
                    if headers[i] is not None:
                        width[i], height[i] = headers[i][0], headers[i][1]
        else:
            width = np.array([h[0] if h else None for h in headers], dtype=object)
            height = np.array([h[1] if h else None for h in headers], dtype=object)
        if needs_size:
            unknown = np.array([w is None or h is None for w, h in zip(width, height)])
            fail(unknown, "image_undecodable",
                 lambda i: f"no width and height for {image_name(batch, i)}: "
                           + ("its metadata is null" + (", and its header is unreadable" if has_image else "")
                              if has_meta else "no metadata, and its header is unreadable"))
            w = np.where(unknown, 1, width).astype(np.float64)
            h = np.where(unknown, 1, height).astype(np.float64)
            small, large = np.minimum(w, h), np.maximum(w, h)
            size = lambda i: f"{int(w[i])}x{int(h[i])}"  # noqa: E731
            if r["min_side"] is not None:
                fail(~unknown & (small < r["min_side"]), "image_too_small", lambda i: f"{size(i)}: min side < {r['min_side']}")
            if r["max_side"] is not None:
                fail(~unknown & (large > r["max_side"]), "image_too_large", lambda i: f"{size(i)}: max side > {r['max_side']}")
            if r["max_aspect_ratio"] is not None:
                ratio = large / np.maximum(small, 1e-12)
                fail(~unknown & (ratio > r["max_aspect_ratio"]), "image_aspect_ratio",
                     lambda i: f"{size(i)}: aspect ratio {ratio[i]:.3f} > {r['max_aspect_ratio']}")
        if r["min_bytes"] is not None:
            fail(sizes < r["min_bytes"], "image_bytes", lambda i: f"{sizes[i]} bytes < {r['min_bytes']}")
        if r["max_bytes"] is not None:
            fail(sizes > r["max_bytes"], "image_bytes", lambda i: f"{sizes[i]} bytes > {r['max_bytes']}")
        if r["formats"] is not None:
            fmt = [h[2] if h else None for h in headers]
            fail(np.array([f not in r["formats"] for f in fmt]), "image_format",
                 lambda i: f"format {fmt[i] or 'unknown'} not in {', '.join(r['formats'])}")
        keep = reasons == None  # noqa: E711
        return Verdict(keep.astype(bool), list(reasons), list(details))
