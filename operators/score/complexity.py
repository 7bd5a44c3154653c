"""complexity_scores: cheap per-row complexity measurements as complexity_* columns.

Of the text column (or of `instruction_column` and `response_column` for instruction data,
each prefixed `instruction_` / `response_`): words, sentences, mean sentence length (words per
sentence), MATTR and the gzip compression ratio (text_stats.py); with `tokenizer`, tokens as
that tokenizer counts them. With `code_column`, the depth and node count of its syntax tree
(code_ast.py: Python's `ast`, tree-sitter for the other languages), in `code_language` or in the
language `code_language_column` names per row; null where the code does not parse or no grammar
covers its language, counted in the manifest (`ast_parse_error`, `ast_unsupported_language`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal, get_args

import numpy as np
import pyarrow as pa
from pydantic import Field, model_validator

from curate.columns import put, text_array
from curate.errors import RecipeError
from curate.ops import Map, Params, loaded, reads_column
from curate.paths import local_path
from curate_operators.score import text_stats
from curate_operators.score.code_ast import CodeShapes, grammar_package, language_name

Metric = Literal["words", "sentences", "mean_sentence_length", "mattr", "compression_ratio"]
METRICS = get_args(Metric)


class ComplexityParams(Params):
    instruction_column: str | None = reads_column(
        None, "Instruction/prompt column: scored as complexity_instruction_*.", instead_of_text=True)
    response_column: str | None = reads_column(None, "Response column: scored as complexity_response_*.",
                                               instead_of_text=True)
    metrics: list[Metric] = Field(list(METRICS), description="Which measurements to write.")
    mattr_window: int = Field(50, ge=2, description="MATTR window, in tokens.")
    tokenizer: str | None = local_path(None, hub=True, description="A Hugging Face tokenizer (local folder or cached hub id): "
                                                    "also write *_tokens.")
    code_column: str | None = reads_column(None, "Source code column: complexity_ast_depth and complexity_ast_nodes.")
    code_language: str = Field("python", description="Language of code_column: python (its `ast`) or any language "
                                                     "with a tree-sitter grammar package, tree_sitter_<name> "
                                                     "(javascript, typescript, c, cpp, go, rust, java, ...).")
    code_language_column: str | None = reads_column(None, "Column naming each row's language (as code_language, "
                                                          "or e.g. 'C++', 'JavaScript'); overrides code_language.")

    @model_validator(mode="after")
    def _language_of_code(self) -> "ComplexityParams":
        if self.code_language_column and not self.code_column:
            raise ValueError("code_language_column gives the language of code_column: give code_column too")
        return self


class Complexity(Map):
    """Words, sentences, mean sentence length, MATTR, compression ratio (and tokens, AST shape) per row."""

    name = "complexity_scores"
    Params = ComplexityParams

    @loaded
    def shapes(self) -> CodeShapes:
        """The tree-sitter parsers (they do not pickle) and the counts of what they could not measure."""
        return CodeShapes()

    @loaded
    def tokenizer(self):
        """What `tokens` counts with; None without `tokenizer`."""
        if not self.params.tokenizer:
            return None
        from curate_operators.score.lm import load_tokenizer

        return load_tokenizer(self.params.tokenizer, self.name)

    @cached_property
    def sources(self) -> list[tuple[str, str]]:
        """(column measured, prefix of its metrics' names): instruction and response, else the text."""
        p = self.params
        pairs = [(c, f"{role}_") for c, role in ((p.instruction_column, "instruction"), (p.response_column, "response"))
                 if c]
        return pairs or [(self.text_column, "")]

    def computed_provides(self) -> tuple[str, ...]:
        p = self.params
        names = [*p.metrics, *(["tokens"] if p.tokenizer else [])]
        return tuple(f"complexity_{prefix}{m}" for _, prefix in self.sources for m in names) + (
            ("complexity_ast_depth", "complexity_ast_nodes") if p.code_column else ())

    def check_schema(self, schema: pa.Schema) -> None:
        p = self.params
        if not p.code_column or p.code_language_column:
            return
        name = language_name(p.code_language)
        if name != "python" and (name is None or self.shapes.parser(name) is None):
            package = grammar_package(name) if name else "tree-sitter-<language>"
            raise RecipeError("code_language", f"no tree-sitter grammar for '{p.code_language}': install the "
                                               f"package {package} (and tree-sitter)")

    def take_counts(self) -> dict[str, int]:
        counts, self.shapes.counts = self.shapes.counts, {}
        return counts

    def _tokens(self, values: pa.Array) -> np.ndarray:
        texts = values.fill_null("").to_pylist()
        enc = self.tokenizer(texts, add_special_tokens=False, return_length=True, return_attention_mask=False)
        return np.asarray(enc["length"], np.float64)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        p = self.params
        for column, prefix in self.sources:
            values = text_array(batch, column, self.name)
            words = text_stats.word_counts(values)
            sentences = text_stats.sentence_counts(values)
            measured = {
                "words": lambda: words,
                "sentences": lambda: sentences,
                "mean_sentence_length": lambda: np.divide(words, sentences, out=np.zeros(len(words)),
                                                          where=sentences > 0),
                "mattr": lambda: text_stats.mattr(values, p.mattr_window),
                "compression_ratio": lambda: text_stats.compression_ratios(values),
            }
            for metric in p.metrics:
                batch = put(batch, f"complexity_{prefix}{metric}", np.asarray(measured[metric](), np.float64))
            if p.tokenizer:
                batch = put(batch, f"complexity_{prefix}tokens", self._tokens(values))
        if p.code_column:
            sources = text_array(batch, p.code_column, self.name).to_pylist()
            languages = (text_array(batch, p.code_language_column, self.name).to_pylist() if p.code_language_column
                         else [p.code_language] * len(sources))
            shapes = [self.shapes.shape(s, lang) for s, lang in zip(sources, languages)]
            batch = put(batch, "complexity_ast_depth", [s[0] if s else None for s in shapes], pa.int64())
            batch = put(batch, "complexity_ast_nodes", [s[1] if s else None for s in shapes], pa.int64())
        return batch
