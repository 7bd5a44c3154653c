"""Tiny Hugging Face models built from a config (no download): a GPT-2 causal LM and a BERT
sequence classifier, sharing a byte-level BPE tokenizer trained on a few sentences."""

from __future__ import annotations

from pathlib import Path

CORPUS = ["the cat sat on the mat", "a dog ran in the park", "write a python function that adds two numbers",
          "explain why the sky is blue", "1 2 3 4 5 6 complexity score", "def add(a, b): return a + b"] * 4


def _tokenizer(max_length: int = 128):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"])
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", model_max_length=max_length)


def build_tiny_gpt2(path: Path) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_classifier(path: Path, labels: int) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=labels,
                        pad_token_id=tokenizer.pad_token_id,
                        id2label={i: f"label_{i}" for i in range(labels)},
                        label2id={f"label_{i}": i for i in range(labels)})
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
