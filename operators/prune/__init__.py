"""Embedding-based pruning: semantic_dedup (SemDeDup) and density_prune (DBP), over shared
spherical k-means (kmeans.py) of embeddings spilled to disk (embeddings.py)."""
