"""The Ray engine. Ray is imported only here, so a local run and `curate --help` do without it."""
