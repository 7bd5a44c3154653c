"""curate.Recipe: a recipe as an editable document (load, edit, check, save), as the Python API
(curate/api.py) takes it: `curate.run` accepts one, or a dict, a path or YAML text (RecipeLike).

Only yaml is imported at module level: `import curate` and `curate --help` stay fast.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

import yaml

from curate.errors import RecipeError

if TYPE_CHECKING:  # for annotations only: importing it here would make `import curate` slow
    from curate import recipe as recipe_module


class Recipe:
    """A recipe as an editable document: load it, change it, check it, save it.

    The document is the YAML as a dict (`recipe.doc`), so anything a recipe file can say can be
    set here. `validate()` is the check `curate run` makes when it loads a recipe (operators,
    parameters and their ranges; with `data=True` also the input, as `curate validate` does).
    Relative paths in a recipe are relative to the working directory, as for the command.
    """

    def __init__(self, doc: Mapping[str, Any] | None = None, *, source: str | Path | None = None):
        doc = {} if doc is None else doc
        if not isinstance(doc, Mapping):
            raise RecipeError("", "a recipe is a YAML mapping with input, output and steps")
        self.doc: dict[str, Any] = copy.deepcopy(dict(doc))
        self.source = None if source is None else str(source)  # the file it came from, for messages

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> "Recipe":
        """A recipe file."""
        p = Path(path)
        if not p.is_file():
            raise RecipeError("", f"recipe file not found: {p}")
        return cls._from_text(p.read_text(encoding="utf-8"), source=p)

    @classmethod
    def from_yaml(cls, text: str) -> "Recipe":
        """A recipe written as YAML text."""
        return cls._from_text(text, source=None)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "Recipe":
        """A recipe given as the dict its YAML would load to (copied: later edits to `doc` do not leak in)."""
        return cls(doc)

    @classmethod
    def of(cls, recipe: "RecipeLike") -> "Recipe":
        """Whatever `curate.run` accepts as a recipe: a Recipe (copied), a dict, a path, or YAML
        text (a str with a line break in it; any other str is a path)."""
        if isinstance(recipe, Recipe):
            return recipe.copy()
        if isinstance(recipe, Mapping):
            return cls.from_dict(recipe)
        if isinstance(recipe, str) and "\n" in recipe:
            return cls.from_yaml(recipe)
        if isinstance(recipe, (str, Path)):
            return cls.load(recipe)
        raise TypeError(f"a recipe is a path, YAML text, a dict or a curate.Recipe, not {type(recipe).__name__}")

    @classmethod
    def _from_text(cls, text: str, source: str | Path | None) -> "Recipe":
        from curate.yaml_errors import yaml_error

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise yaml_error(source, text, e) from None
        return cls(doc or {}, source=source)

    # -- editing -------------------------------------------------------------------------------

    def copy(self) -> "Recipe":
        return Recipe(self.doc, source=self.source)

    def set(self, key: str, value: Any) -> "Recipe":
        """Set one value by its place, as `--set` does: `output.path`, `steps[1].gopher_quality.min_words`.
        `value` is a Python value (a dict, a list, a number, ...), not YAML text. Returns the recipe."""
        from curate.recipe import apply_override

        apply_override(self.doc, f"{key}={_as_yaml(value)}")
        return self

    @property
    def name(self) -> str:
        return str(self.doc.get("name", "run"))

    @property
    def steps(self) -> list:
        """The steps as written: a list of `{operator: {params}}` (edit it in place)."""
        return self.doc.setdefault("steps", [])

    def add_step(self, operator: str, index: int | None = None, /, **params: Any) -> "Recipe":
        """Append a step (or insert it before `index`): `recipe.add_step("sample", fraction=0.1)`.
        The operator and its parameters are checked by `validate()` and by a run."""
        step = {operator: dict(params)}
        if index is None:
            self.steps.append(step)
        else:
            self.steps.insert(index, step)
        return self

    def remove_step(self, operator_or_index: str | int) -> "Recipe":
        """Remove a step by its index in `steps` or by its operator's name (the first such step)."""
        steps = self.steps
        if isinstance(operator_or_index, int):
            del steps[operator_or_index]
            return self
        for i, step in enumerate(steps):
            name = step if isinstance(step, str) else next(iter(step), None) if isinstance(step, dict) else None
            if name == operator_or_index:
                del steps[i]
                return self
        raise KeyError(f"no step runs {operator_or_index!r} (steps: {', '.join(map(str, _step_names(steps)))})")

    # -- checking and saving -------------------------------------------------------------------

    def validate(
        self,
        *,
        input: str | None = None,
        output: str | None = None,  # noqa: A002 - `curate run`'s names
        set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002
        data: bool = False,
    ) -> "recipe_module.Recipe":
        """Check the recipe as `curate validate --no-data` does (and with `data=True` as `curate
        validate` does: the output path, the input files and each step's columns against them).
        Returns the validated model the engine runs; raises RecipeError / CurateError naming the place."""
        from curate import preflight
        from curate.recipe import load

        overrides = as_overrides(set)
        text = self.to_yaml()
        model = load(text=text, overrides=overrides, input_path=input, output_path=output)
        preflight.check_paths(model)
        if data:
            preflight.check(model, preflight.inputs(model))
        return model

    def to_yaml(self) -> str:
        """The recipe as YAML (keys in the order they were written; comments of a loaded file are not kept)."""
        return yaml.safe_dump(self.doc, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.to_yaml(), encoding="utf-8")
        return p

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recipe) and self.doc == other.doc

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"curate.Recipe({self.name!r}{where}: {' -> '.join(map(str, _step_names(self.steps))) or 'no steps'})"


RecipeLike = Union[Recipe, Mapping[str, Any], str, Path]


def _step_names(steps: list) -> list:
    return [s if isinstance(s, str) else next(iter(s), "?") if isinstance(s, dict) else "?" for s in steps]


def _as_yaml(value: Any) -> str:
    """`value` as YAML text that loads back to it (what `--set key=TEXT` parses). One line, in
    flow style: a float keeps its exponent's dot (PyYAML reads `1e-05` as a string, `1.0e-05`
    as a float), a string that looks like a number stays quoted."""
    return (
        yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=math.inf)
        .strip()
        .removesuffix("...")
        .strip()
    )


def as_overrides(set_: Mapping[str, Any] | Iterable[str] | None) -> list[str]:
    """`set=` as `--set` assignments: a mapping of key -> Python value, or `key=YAML` strings as
    on the command line."""
    if set_ is None:
        return []
    if isinstance(set_, Mapping):
        return [f"{key}={_as_yaml(value)}" for key, value in set_.items()]
    if isinstance(set_, str):
        return [set_]
    return [str(item) for item in set_]
