"""The proxy model: a decoder-only transformer built from a transformers config (no download).

Presets (Llama architecture: RMSNorm, RoPE, SwiGLU, no biases, untied embeddings, as the
DataDecide/OLMo ladder): `tiny` about 1M parameters (nanoGPT's CPU shakespeare size: 4 layers,
4 heads, 128 wide; minutes on 2 CPU cores), `small` about 20M (DataDecide's 20M shape: 16 layers,
192 wide), `base` about 150M (12 layers, 768 wide: a GPU). Parameter counts with the byte-level
vocabulary; a larger vocabulary adds 2 x vocab x width. A config file (JSON) is a transformers
config: its `model_type` (llama, gpt2, ...) picks the class; the vocabulary size is the tokenizer's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curate.errors import CurateError

PRESETS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=344),
    "small": dict(hidden_size=192, num_hidden_layers=16, num_attention_heads=8, intermediate_size=2048),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=4096),
}


def model_config(model: str, vocab: int, seq_len: int) -> dict:
    """The config (a dict with model_type) for `model`: a preset name or a JSON file."""
    d: dict[str, Any]
    if model in PRESETS:
        d = dict(model_type="llama", **PRESETS[model])
        d.update(
            num_key_value_heads=d["num_attention_heads"],
            tie_word_embeddings=False,
            attention_bias=False,
            mlp_bias=False,
            rms_norm_eps=1e-5,
            hidden_act="silu",
        )
    else:
        p = Path(model)
        if not p.is_file():
            raise CurateError(f"--model {model}: not a preset ({', '.join(PRESETS)}) nor a config file")
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise CurateError(f"--model {model}: cannot read it as a JSON config: {e}") from None
        if not isinstance(d, dict) or "model_type" not in d:
            raise CurateError(f"--model {model}: a transformers config needs a model_type (llama, gpt2, ...)")
    d = dict(d)
    d["vocab_size"] = vocab
    key = "n_positions" if d["model_type"] == "gpt2" else "max_position_embeddings"
    d[key] = max(int(d.get(key) or 0), seq_len)
    if d["model_type"] == "gpt2":
        d.setdefault("resid_pdrop", 0.0), d.setdefault("embd_pdrop", 0.0), d.setdefault("attn_pdrop", 0.0)
    return d


LADDER_LR_AT_108M = 0.0047  # OLMo scripts/ladder.py: peak LR = 0.0047 x (N / 108M)^(-1/3)
PROXY_LR_SHARE = 1 / 4  # of the ladder's peak: see default_lr


def default_lr(params: int) -> float:
    """The proxy's default peak learning rate: the OLMo ladder's for a model of `params`
    parameters (tuned for full-length runs), times 1/4: tiny 5.9e-3, small 2.1e-3, base 1.05e-3.
    arXiv 2512.24503 finds that proxies at a much reduced rate (their GPT-2 125M proxies: about
    1e-5 to 1e-6 where 6e-4 is usual) rank datasets as tuned large models do; but a CPU proxy
    trains for a hundred-odd steps, and at a small rate it stays where its initial weights decide
    more than its data. On the demo crawl (`curate demo --for ablate`, 262,144 tokens, 128 steps)
    the tiny model at 1.2e-3 (ladder / 20) ended near 3.1-3.2 bits per byte on clean held-out text,
    worse than a byte trigram count model of the same tokens (2.8), its per-seed bpb spread over
    0.1 and the quickstart's output-minus-input difference 0.14, 0.06, 0.07 bpb over three seeds
    (p = 0.06); at 1.2e-4 (ladder / 200), on the default demo, it stayed near 5.2 bpb. Give
    --lr twice (this and a smaller one) to see whether a ranking holds at a small rate; a flip is
    a warning in the result."""
    return LADDER_LR_AT_108M * (params / 108e6) ** (-1 / 3) * PROXY_LR_SHARE


def build(config: dict, seed: int):
    """The model of `config`, its weights drawn from `seed` (the same for every arm)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(config)
    try:
        cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    except (ValueError, TypeError, KeyError) as e:
        raise CurateError(f"--model: not a transformers config: {e}") from None
    cfg._attn_implementation = "eager" if config["model_type"] == "gpt2" else "sdpa"
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_config(cfg)
    except ValueError as e:
        raise CurateError(f"--model: {config['model_type']} is not a decoder-only (causal LM) model: {e}") from None
    return model


def parameters(model, embeddings: bool = True) -> int:
    n = sum(p.numel() for p in model.parameters())
    if not embeddings:
        n -= model.get_input_embeddings().weight.numel()
    return n
