"""curate: data-curation pipelines for training data."""

__version__ = "0.1.0"
