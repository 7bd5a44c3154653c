"""What executes tasks, whatever the engine: the Executor and Engine contract, the registry of
engines (engines.py), task dispatch and retries, worker processes, and the work store that carries
a task's files. The engines (local/, ray/, slurm/) build on it; the runner (run/) uses it."""
