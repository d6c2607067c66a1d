"""check_schema accepts exactly what the grammar converter honours and refuses the rest by
name and place, in bounded time on hostile input; problem() validates what it accepted."""

from __future__ import annotations

import time

import pytest

from app.engine.tools.pattern import PatternError, converter_pattern
from app.engine.tools.schema import check_schema, problem
from app.engine.tools.types import ToolsError

P = "response_format.json_schema.schema"

ACCEPTED = [
    {},
    {"type": "string", "description": "anything a string"},
    {"type": ["string", "null"]},
    {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    {"oneOf": [{"const": "a"}, {"const": "b"}]},
    {"type": "string", "enum": ["c", "f"]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    {"type": "string", "pattern": r"^[A-Z]{2}-\d{3}$"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "minLength": 1, "maxLength": 8},
    {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
     "type": "object", "properties": {"p": {"$ref": "#/$defs/point", "description": "where"}}},
    # a tree: recursive, but through an array that may be empty
    {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
     "$ref": "#/$defs/node"},
]

REFUSED = [
    ({"type": "object", "properties": {"when": {"type": "string", "format": "hostname"}}},
     f'{P}.properties.when: "format": "hostname" is not supported'),
    ({"type": "integer", "minimum": 0}, f'{P}: "minimum" is not supported'),
    ({"type": "string", "pattern": "^a+$", "maxLength": 3}, f'{P}: "maxLength" is not supported together with "pattern"'),
    ({"$ref": "#/$defs/a", "type": "string", "$defs": {"a": {}}}, f'{P}: "type" is not supported together with "$ref"'),
    ({"type": ["string", "null"], "maxLength": 3}, '"maxLength" is not supported together with "type list"'),
    ({"minLength": 2}, '"minLength" is not supported without "type": "string"'),
    ({"type": "array", "minItems": 2}, '"minItems" is not supported without "items"'),
    ({"allOf": [{"type": "string"}]}, '"allOf" is not supported'),
    ({"not": {"type": "string"}}, '"not" is not supported'),
    ({"type": "object", "properties": {"a": {}}, "required": ["b"]}, '"b" is required but not among the properties'),
    ({"$ref": "https://example.com/s.json"}, "only local references"),
    ({"$ref": "#/$defs/missing"}, "#/$defs/missing is not defined"),
    ({"enum": ['say "hi"']}, "the grammar cannot write here"),
    ({"type": "string", "enum": ["a", 1]}, "1 is not of type string"),
    ({"enum": []}, "must list 1 to"),
    ({"type": "string", "pattern": "^[^@]+$"}, "negated classes"),
    ({"type": "string", "pattern": "abc"}, 'must start with "^"'),
    ({"type": "string", "maxLength": 100000}, "must be a whole number from 0 to 1000"),
    ({"type": "strin"}, '"type": "strin" is not a JSON schema type'),
    ({"type": "object", "properties": {"a": True}}, "true/false schemas are not supported"),
    ({"properties": {"a": {"$defs": {}}}}, '"$defs" is supported only at the top'),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"},
     "left recursion"),
    ({"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}, "required": ["k"]}}, "$ref": "#/$defs/n"},
     "never ends"),
    ({"type": "number", "const": float("nan")}, "is not a JSON number"),
]


@pytest.mark.parametrize("schema", ACCEPTED)
def test_accepts_what_the_converter_honours(schema):
    assert check_schema(schema, P) is schema


@pytest.mark.parametrize("schema,message", REFUSED)
def test_refuses_the_rest_naming_the_construct_and_place(schema, message):
    with pytest.raises(ToolsError) as caught:
        check_schema(schema, P)
    assert message in str(caught.value)
    assert caught.value.param.startswith(P)


def test_hostile_schemas_are_refused_quickly():
    deep: dict = {}
    node = deep
    for _ in range(10_000):
        node["items"] = {}
        node = node["items"]
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 1000} for i in range(10_000)}}
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}}
    cycle = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{(i + 1) % 100}"} for i in range(100)}, "$ref": "#/$defs/d0"}
    for schema, words in ((deep, "nested more than"), (huge, "longer than"), (many, "more than"), (cycle, "left recursion")):
        # This thread's CPU time: the work the check does, not how busy the machine was (a wall
        # clock failed this while another suite shared the two cores).
        started = time.thread_time()
        with pytest.raises(ToolsError, match=words):
            check_schema(schema, P)
        assert time.thread_time() - started < 0.5


WEATHER = {"type": "object", "additionalProperties": False, "required": ["city"], "properties": {
    "city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}, "unit": {"enum": ["c", "f"]},
    "on": {"type": "string", "format": "date"}, "code": {"type": "string", "pattern": r"^[A-Z]{2}\d$"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
}}


@pytest.mark.parametrize("value,found", [
    ({"city": "Paris", "days": 3, "unit": "c", "on": "2026-02-28", "code": "FR1", "tags": ["a"], "maybe": None}, None),
    ({"city": "Paris", "days": 3.0}, None),  # 3.0 is an integer in JSON schema
    ({"days": 3}, '$: the required property "city" is missing'),
    ({"city": "Paris", "days": True}, "$.days: true is not of type integer"),
    ({"city": "Paris", "unit": "k"}, '$.unit: "k" is not one of ["c", "f"]'),
    ({"city": "Paris", "on": "2026-13-01"}, '$.on: "2026-13-01" is not a date'),
    ({"city": "Paris", "code": "fr1"}, "does not match"),
    ({"city": "Paris", "tags": ["a", "b", "c"]}, "$.tags: 3 items"),
    ({"city": "x" * 21}, "longer than 20"),
    ({"city": "Paris", "extra": 1}, '"extra" is not one of its properties'),
    ({"city": "Paris", "maybe": "no"}, "matches none of the 2 alternatives of anyOf"),
])
def test_problem_names_the_first_failure_and_where(value, found):
    check_schema(WEATHER, P)
    result = problem(value, WEATHER)
    assert result == found if found is None else found in result


def test_recursive_values_validate_with_a_depth_bound():
    tree = ACCEPTED[-1]
    assert problem({"kids": [{"kids": []}, {}]}, tree) is None
    assert "not of type object" in problem({"kids": [1]}, tree)
    deep: dict = {}
    node = deep
    for _ in range(500):
        node["kids"] = [{}]
        node = node["kids"][0]
    assert "nested more than" in problem(deep, tree)


@pytest.mark.parametrize("pattern,form", [
    (r"^\d{3}$", r"^[\x30-\x39]{3}$"),
    (r"^v\d+(\.\d+)?$", r"^v[\x30-\x39]+([\x2E][\x30-\x39]+)?$"),
    ("^[ -~]+$", r"^[\x20-\x21\x23-\x5B\x5D-\x7E]+$"),  # the quote and the backslash left out
    ("^(ab|cd)*.$", "^(ab|cd)*.$"),
])
def test_patterns_are_rewritten_for_the_converter(pattern, form):
    assert converter_pattern(pattern) == form


@pytest.mark.parametrize("pattern", [r"^\s+$", "^a(?=b)$", "^a+?$", "^a{1,500}$", "^((a{0,40}){0,40})$", '^"$', "^a|$"])
def test_patterns_outside_the_subset_are_refused(pattern):
    with pytest.raises(PatternError):
        converter_pattern(pattern)
