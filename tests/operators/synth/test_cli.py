"""`curate prompts`: every shipped prompt file listed with the parameter that replaces it, and
written out exactly, so that a prompt saved with `show` and given back as '@file' is the one
the operator uses by default."""

from __future__ import annotations

import pytest

from curate_operators.synth import instruct
from curate_operators.synth.evol_instruct import EvolInstruct, EvolInstructParams
from curate_operators.synth.generate_qa import GenerateQA, GenerateQAParams
from curate_operators.synth.prompts import CATALOG, HERE, PROMPTS

LLM = {"model": "mock", "base_url": "http://127.0.0.1:1/v1"}


def test_every_prompt_file_is_listed_and_every_listed_prompt_has_its_file(cli):
    assert sorted(p.stem for p in HERE.glob("*.txt")) == sorted(CATALOG)
    listed = cli("prompts", "list").stdout.splitlines()
    assert [line.split()[0] for line in listed] == list(CATALOG)
    assert all(CATALOG[line.split()[0]][0] in line for line in listed)  # the parameter that replaces it


@pytest.mark.parametrize("name", list(CATALOG))
def test_show_writes_the_file_exactly(cli, name):
    assert cli("prompts", "show", name).stdout_bytes == (HERE / f"{name}.txt").read_bytes()


def test_a_prompt_written_out_and_given_back_is_the_default(cli, tmp_path):
    (tmp_path / "depth.txt").write_bytes(cli("prompts", "show", "evol_depth").stdout_bytes)
    (tmp_path / "qa.txt").write_bytes(cli("prompts", "show", "diverse_qa").stdout_bytes)
    evolve = EvolInstruct(EvolInstructParams(llm=LLM, depth=f"@{tmp_path / 'depth.txt'}"))
    assert evolve.depth == instruct.EVOL_DEPTH == EvolInstruct(EvolInstructParams(llm=LLM)).depth
    ask = GenerateQA(GenerateQAParams(llm=LLM, template=f"@{tmp_path / 'qa.txt'}"))
    assert ask.template == instruct.DIVERSE_QA == GenerateQA(GenerateQAParams(llm=LLM)).template
    assert cli("prompts", "show", "wrap_medium").stdout == PROMPTS["medium"]


def test_an_unknown_prompt_is_an_error_naming_the_known_ones(cli):
    result = cli("prompts", "show", "diverse")
    assert result.exit_code == 2 and result.stdout == ""
    assert "no shipped prompt 'diverse'; known: wrap_easy, " in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
