"""open_clip backend: text and image embeddings in one space.

`model` is one of:
- a local folder in the Hugging Face open_clip layout: `open_clip_config.json` ({"model_cfg": ...,
  "preprocess_cfg": ...}) and the weights (`open_clip_model.safetensors`, `open_clip_pytorch_model.bin`, ...);
- `hf-hub:ORG/NAME`, such a folder already in the local Hugging Face cache;
- a model config JSON file (the open_clip config format; its file name is the model's name);
- an open_clip architecture name (`ViT-B-32`, ...).
`pretrained` is a local checkpoint file (it replaces the folder's weights), or `random` (random
weights: for tests only). A folder with weights needs no `pretrained`; a config file or an
architecture name does. Named pretrained tags (`openai`, `laion2b_...`) would be downloads, which
a run never does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curate.errors import CurateError
from curate_operators.embed.backends import ModelBackend, require
from curate_operators.embed.decoding import CHUNK, DecodePool, InlineFeed, decode_workers
from curate.paths import looks_like_path
from curate_operators.embed.resolve import cached_snapshot, hub_cache_dir, set_offline

_WEIGHTS = ("*.safetensors", "*.bin", "*.pth", "*.pt")
_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


class OpenClipBackend(ModelBackend):
    def __init__(self, params):
        super().__init__(params)
        import torch

        set_offline()
        open_clip = require("open_clip", "open_clip")
        name, load_weights, checkpoint = self.resolve(open_clip, params.model, params.pretrained)
        # torch's threads are the cores the pool gave this model process (OMP_NUM_THREADS)
        workers = decode_workers(params.decode_workers, self.device, torch.get_num_threads()) \
            if params.modality == "image" else 0
        # started before the model loads: the workers' imports overlap its loading
        self.decoders = DecodePool(workers) if workers else None
        try:
            model, preprocess, tokenizer = self.load(open_clip, name, load_weights, checkpoint)
            if self.decoders is not None:
                # the ring holds the batch the model reads and the next ones the workers decode
                self.decoders.configure(preprocess, image_shape(preprocess),
                                        2 * params.batch_size + 2 * CHUNK * workers)
        except BaseException:
            self.close()
            raise
        self.model, self.preprocess, self.tokenizer = model, preprocess, tokenizer
        self.pinned = None  # a page-locked batch buffer for copies to the GPU, made at the first batch
        self.torch = torch
        dim = getattr(getattr(model, "visual", None), "output_dim", None)
        if not isinstance(dim, int):
            with torch.inference_mode():
                dim = int(model.encode_text(tokenizer(["x"]).to(self.device)).shape[-1])
        self.dim = dim

    def load(self, open_clip, name: str, load_weights: bool, checkpoint: Path | None):
        """(model in eval mode, its preprocess, its tokenizer); a CurateError naming what did not load."""
        precision = _PRECISION[str(self.dtype).removeprefix("torch.")]
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=None, load_weights=load_weights, device=self.device, precision=precision,
                pretrained_image=False, pretrained_text=False)
            if checkpoint is not None:
                open_clip.load_checkpoint(model, str(checkpoint), device=self.device)
            tokenizer = open_clip.get_tokenizer(name)
        except CurateError:
            raise
        except Exception as e:  # noqa: BLE001: a broken folder, config or checkpoint
            raise CurateError(f"embed: could not load open_clip model '{self.params.model}'"
                              f"{f' with weights {checkpoint}' if checkpoint else ''}: {type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None
        model.eval()
        return model, preprocess, tokenizer

    @staticmethod
    def resolve(open_clip, model: str, pretrained: str | None) -> tuple[str, bool, Path | None]:
        """(open_clip model name, load the folder's weights?, checkpoint file to load after)."""
        folder = None
        if model.startswith("hf-hub:"):
            folder = cached_snapshot(model.removeprefix("hf-hub:"))
            if folder is None:
                raise CurateError(f"embed: open_clip model '{model}' is not in the Hugging Face cache "
                                  f"({hub_cache_dir()}); models are never downloaded during a run: fetch it "
                                  f"beforehand, or give the path of a local open_clip model folder")
        else:
            path = Path(model).expanduser()
            if path.is_dir():
                folder = path.resolve()
            elif path.is_file():
                if path.suffix != ".json":
                    raise CurateError(f"embed: open_clip model '{model}' is a file but not a config JSON; give a "
                                      f"model folder or a config file as `model:`, and weights as `pretrained:`")
                open_clip.add_model_config(path.resolve())
                name = path.stem
            elif model in open_clip.list_models():
                name = model
            elif looks_like_path(model):
                raise CurateError(f"embed: open_clip model '{model}' not found: the local path {path.resolve()} "
                                  f"does not exist")
            else:
                raise CurateError(f"embed: open_clip model '{model}' is not a local folder or config file, an "
                                  f"hf-hub: id, or an open_clip architecture (such as ViT-B-32)")
        has_weights = False
        if folder is not None:
            if not (folder / "open_clip_config.json").is_file():
                raise CurateError(f"embed: {folder} is not an open_clip model folder (it has no "
                                  f"open_clip_config.json)")
            name = f"local-dir:{folder}"
            has_weights = any(p for pattern in _WEIGHTS for p in folder.glob(pattern))
        if pretrained == "random":
            return name, False, None
        if pretrained:
            checkpoint = Path(pretrained).expanduser()
            if not checkpoint.is_file():
                raise CurateError(f"embed: open_clip pretrained '{pretrained}' is not a local checkpoint file "
                                  f"({checkpoint.resolve()} does not exist; named tags would be downloads, which a "
                                  f"run never does). Give a checkpoint path, or `random`")
            return name, False, checkpoint.resolve()
        if has_weights:
            return name, True, None
        where = f"the folder {folder} holds no weights" if folder is not None else \
            f"'{model}' is only an architecture"
        raise CurateError(f"embed: open_clip model '{model}' has no weights: {where}. Give `pretrained:` a local "
                          f"checkpoint file (or `pretrained: random`, random weights, for tests)")

    def lengths(self, items: list) -> np.ndarray:
        """Text is always padded to the model's context length: every text costs that many tokens."""
        return np.full(len(items), getattr(self.tokenizer, "context_length", 77), dtype=np.int64)

    def encode(self, items: list[str]) -> np.ndarray:
        tokens = self.tokenizer(items).to(self.device)
        return self.model.encode_text(tokens).float().cpu().numpy()

    def embed(self, items):
        if self.params.modality == "text":
            return super().embed(items)
        items = self.prepare(items)
        errors: dict[int, str] = {}
        if not items:
            return np.empty((0, self.dim), dtype=np.float32), errors
        torch = self.torch
        feed = self.decoders.feed(items) if self.decoders is not None else InlineFeed(self.preprocess, items)

        def encode(positions: np.ndarray) -> np.ndarray:
            start, count = int(positions[0]), len(positions)  # equal lengths: the batcher keeps input order
            pixels, ok, failed = feed.take(start, count)
            errors.update(failed)
            out = np.zeros((count, self.dim), dtype=np.float32)
            if ok.any():
                out[ok] = self.model.encode_image(self.on_device(pixels)).float().cpu().numpy()
            feed.release(start + count)
            return out

        with torch.inference_mode():
            matrix = self.batcher.run(np.zeros(len(items), dtype=np.int64), encode)
        return matrix, errors

    def on_device(self, pixels: np.ndarray):
        """The batch as a tensor of the model's device and precision; to a GPU through a pinned buffer,
        so the copy is a DMA that does not wait on pageable memory."""
        batch = self.torch.from_numpy(np.asarray(pixels))
        if self.device == "cpu":
            return batch.to(dtype=self.dtype)
        if self.pinned is None or len(self.pinned) < len(batch):
            self.pinned = self.torch.empty(batch.shape, dtype=batch.dtype, pin_memory=True)
        staged = self.pinned[:len(batch)]
        staged.copy_(batch)
        # encode_image's result is copied back (.cpu()) before the buffer is written again
        return staged.to(self.device, dtype=self.dtype, non_blocking=True)

    def close(self) -> None:
        if self.decoders is not None:
            self.decoders.close()
            self.decoders = None
        self.pinned = None
        super().close()


def image_shape(preprocess) -> tuple[int, ...]:
    """The shape of one preprocessed image (the preprocess resizes and crops to the model's size)."""
    from PIL import Image

    return tuple(preprocess(Image.new("RGB", (8, 8))).shape)
