"""The operator library, one concept per file. Each operator is registered by name in
pyproject.toml's `curate.operators` entry points and imported only when a recipe or
`curate ops` uses it."""
