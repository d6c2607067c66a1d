"""`hearth chat --tools / --tool-choice / --json-schema`, run as a user runs it."""

from __future__ import annotations

import json

import pytest
from support.model_files.scripted_models import scripted_models
from test_cli import hearth

from app.engine.tools.schema import check_schema, problem

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]}}}


@pytest.fixture
def tools_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([WEATHER]))
    return path


def test_each_call_is_one_json_line_on_stdout(tools_file):
    model = scripted_models()["qwen3"].path
    out = hearth("chat", model, "What is the weather in Paris?", "--tools", tools_file, "--temperature", "0")
    [line] = [line for line in out.stdout.decode().splitlines() if line.strip()]
    call = json.loads(line)["tool_call"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
    assert call["id"] and "problem" not in call


def test_a_schema_holds_the_base_models_reply(gemma_path, tmp_path):
    schema = {"type": "object", "required": ["city", "country"], "additionalProperties": False,
              "properties": {"city": {"type": "string", "maxLength": 30}, "country": {"type": "string", "maxLength": 30}}}
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema))
    out = hearth("chat", gemma_path, "Name a city.", "--json-schema", schema_file, "--temperature", "0",
                 "--max-tokens", "96")
    assert problem(json.loads(out.stdout), check_schema(schema, "s")) is None


@pytest.mark.parametrize(("args", "said"), [
    (["--tool-choice", "required"], "--tool-choice goes with --tools"),
    (["--tools", "TOOLS", "--tool-choice", "nope"], "--tool-choice"),
])
def test_flags_that_do_not_fit_are_refused_by_name(gemma_path, tools_file, args, said):
    args = [str(tools_file) if arg == "TOOLS" else arg for arg in args]
    out = hearth("chat", gemma_path, "Hi", *args, check=False)
    assert out.returncode == 2 and said in out.stderr.decode()


def test_a_schema_the_grammar_cannot_hold_is_refused_naming_the_construct(gemma_path, tmp_path):
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}}))
    out = hearth("chat", gemma_path, "Hi", "--json-schema", schema_file, check=False)
    assert out.returncode == 2 and "--json-schema" in out.stderr.decode() and "minimum" in out.stderr.decode()
