"""The local engine: task processes on this machine, and the model pool of a model stage."""
