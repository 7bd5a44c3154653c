"""Benchmark decontamination: exact word n-gram overlap of training documents with benchmark items."""
