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

from curate.errors import CurateError

PRESETS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=344),
    "small": dict(hidden_size=192, num_hidden_layers=16, num_attention_heads=8, intermediate_size=2048),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=4096),
}


def model_config(model: str, vocab: int, seq_len: int) -> dict:
    """The config (a dict with model_type) for `model`: a preset name or a JSON file."""
    if model in PRESETS:
        d = dict(model_type="llama", **PRESETS[model])
        d.update(num_key_value_heads=d["num_attention_heads"], tie_word_embeddings=False, attention_bias=False,
                 mlp_bias=False, rms_norm_eps=1e-5, hidden_act="silu")
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
PROXY_LR_SHARE = 1 / 20  # of the ladder's peak: see default_lr


def default_lr(params: int) -> float:
    """The proxy's default peak learning rate: the OLMo ladder's for a model of `params`
    parameters (tuned for full-length runs), times 1/20. A reduced rate follows arXiv 2512.24503
    (proxies at a small LR rank datasets as tuned large models do; their GPT-2 125M proxies used
    about 1e-5 to 1e-6 where 6e-4 is usual, a 60-600x cut); a CPU proxy, though, trains for a few
    hundred steps, and at 1/200 of the ladder (1.2e-4 for tiny) 262,144 tokens left the tiny model
    near 5.2 bits per byte with no difference between the quickstart's input and output, where
    1e-3 gave 3.1 bpb and a consistent 0.045 bpb gap (bench/ablate.py). tiny: 1.2e-3, small:
    4.0e-4, base: 2.1e-4. Give --lr twice (this and a smaller one) to see whether the ranking holds."""
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
