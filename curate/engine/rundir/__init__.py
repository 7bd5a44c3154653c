"""The run directory: its layout (every path a run writes), its lock and lease, and its files on a
store. The lowest of the engine's packages: it knows nothing of plans, tasks or executors."""
