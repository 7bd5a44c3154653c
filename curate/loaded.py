"""What an operator loads once per worker (a model, a tokenizer, a table), and frees when its
stage is done: the one mechanism every model operator uses.

    class Perplexity(Map):
        @loaded
        def lm(self) -> CausalLM:
            return CausalLM(self.params.model, ...)

`self.lm` loads on first use and is then kept. The engine calls `Operator.setup()` in each
worker before the first batch, which loads every `loaded` attribute (a model that cannot load
fails there, and the step's seconds are its batches alone), and `Operator.teardown()` when the
stage is done, which closes (`close()`, where the value has one) and forgets them, so GPU
memory is free before the next stage. A loaded value never travels with its operator between
processes: pickling drops it, and the worker that unpickles loads its own.
"""

from __future__ import annotations

from typing import Any, Callable


class loaded:  # lower case: used as a decorator, like functools.cached_property
    """A method whose value an operator loads once per worker and keeps (see above)."""

    def __init__(self, load: Callable[[Any], Any]):
        self.load = load
        self.name = load.__name__
        self.__doc__ = load.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, op, owner=None):
        if op is None:
            return self
        # Kept in the instance's __dict__, which shadows this (non-data) descriptor from then on.
        value = op.__dict__[self.name] = self.load(op)
        return value


def loaded_names(cls: type) -> list[str]:
    """The `loaded` attributes of an operator class, its bases' included."""
    return [name for klass in reversed(cls.__mro__) for name, value in vars(klass).items() if isinstance(value, loaded)]


def load_all(op) -> None:
    """Load every `loaded` attribute of `op` not yet loaded."""
    for name in loaded_names(type(op)):
        getattr(op, name)


def is_loaded(op, name: str) -> bool:
    return name in op.__dict__


def free_all(op) -> None:
    """Close and forget every loaded value of `op` (the next use loads it again)."""
    for name in loaded_names(type(op)):
        value = op.__dict__.pop(name, None)
        if value is not None and callable(getattr(value, "close", None)):
            value.close()


def without_loaded(op) -> dict:
    """`op`'s state for pickling: its attributes less what it loaded."""
    names = set(loaded_names(type(op)))
    return {k: v for k, v in op.__dict__.items() if k not in names}
