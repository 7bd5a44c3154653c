"""A run's tasks: the plan (stages and their tasks), a stage's context, and how one task runs its
steps over its batches (task.py, steps.py). Knows the run directory, nothing that executes tasks."""
