"""Embeddings: the `embed` operator (embed.py) and its backends (sentence-transformers, transformers,
open_clip, hash). Heavy libraries load only when a backend is set up."""
