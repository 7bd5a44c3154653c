"""What a run means, whatever engine executes its tasks: the runner, a Global step's fit, the
publication of the run (data/, trace/, manifest.json) and the run's own observers. The top of
the engine: it reaches an engine only through the registry (work/engines.py)."""
