"""A reply's text split into text and calls, per family, on the models' real output text (taken
from llama.cpp's tests/test-chat.cpp), streamed in pieces split at every character position:
the same text and the same calls come out however the reply is cut, a call's fragments add up
to its arguments, and hostile text is met in bounded time and memory."""

from __future__ import annotations

import json
import time

import pytest

from app.engine.tools.formats import BY_NAME
from app.engine.tools.parsing import ToolCallParser
from app.engine.tools.types import Tool, ToolCall, ToolCallDelta, ToolUse

USE = ToolUse(tools=(
    Tool("special_function", parameters={"type": "object", "properties": {"arg1": {"type": "integer"}}}),
    Tool("special_function_with_opt", parameters={"type": "object", "properties": {
        "arg1": {"type": "integer"}, "arg2": {"type": "integer"}}}),
    Tool("get_time", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
))
ONE = [("special_function", {"arg1": 1})]
TWO = [("special_function", {"arg1": 1}), ("special_function_with_opt", {"arg1": 1, "arg2": 2})]

# (format, the model's output, the text, the calls)
REAL_OUTPUTS = [
    ("hermes", '<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}</tool_call>', "", ONE),
    ("hermes", 'Hello, world!\nWhat\'s up?<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}'
               "</tool_call>", "Hello, world!\nWhat's up?", ONE),
    ("hermes", '<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}\n</tool_call>\n<tool_call>\n'
               '{"name": "special_function_with_opt", "arguments": {"arg1": 1, "arg2": 2}}\n</tool_call>', "", TWO),
    ("llama3", '{"name": "special_function", "parameters": {"arg1": 1}}', "", ONE),
    ("llama3", '<|python_tag|>{"name": "special_function", "parameters": {"arg1": 1}}<|eom_id|>', "", ONE),
    ("mistral-nemo", '[TOOL_CALLS][{"name": "special_function", "arguments": {"arg1": 1}, "id": "123456789"}]', "",
     ONE),
    ("mistral-small", "[TOOL_CALLS]special_function[CALL_ID]000000001[ARGS]{\"arg1\": 1}"
                      "[TOOL_CALLS]special_function_with_opt[CALL_ID]000000002[ARGS]{\"arg1\": 1, \"arg2\": 2}", "", TWO),
    ("devstral", 'Hello, world!\nWhat\'s up?[TOOL_CALLS]special_function[ARGS]{"arg1": 1}',
     "Hello, world!\nWhat's up?", ONE),
    ("granite", '<|tool_call|>[{"name": "special_function", "arguments": {"arg1": 1}}]', "", ONE),
    ("phi4-mini", '<|tool_call|>[{"name": "special_function", "arguments": {"arg1": 1}}, '
                  '{"name": "special_function_with_opt", "arguments": {"arg1": 1, "arg2": 2}}]<|/tool_call|>', "", TWO),
    ("command-r7b", "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_ACTION|>[\n"
                    '    {"tool_call_id": "0", "tool_name": "special_function", "parameters": {"arg1": 1}}\n'
                    "]<|END_ACTION|>", "<|START_THINKING|>I'm\nthinking<|END_THINKING|>", ONE),
    ("deepseek-r1", "</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n"
                    "```json\n{\"arg1\": 1}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "</think>", ONE),
    ("deepseek-v3.1", "REASONING</think>CONTENT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>"
                      '{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>special_function<｜tool▁sep｜>'
                      '{"arg1": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "REASONING</think>CONTENT",
     [("get_time", {"city": "Paris"}), ("special_function", {"arg1": 1})]),
    ("gpt-oss", "<|channel|>commentary to=functions.special_function<|message|>{\"arg1\": 1}",
     "<|channel|>commentary ", ONE),
    ("gpt-oss", " to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{\"arg1\": 1}<|call|>",
     "", ONE),
    ("gemma4", '<|tool_call>call:get_time{city:<|"|>San Francisco<|"|>}<tool_call|>', "",
     [("get_time", {"city": "San Francisco"})]),
    ("gemma4", "Hello, world!\nWhat's up?<|tool_call>call:special_function{arg1:1}<tool_call|>",
     "Hello, world!\nWhat's up?", ONE),
    ("qwen3-coder", "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n"
                    "</tool_call>", "", ONE),
    ("qwen3-coder", "Let me call it.\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n"
                    "</tool_call>\n<tool_call>\n<function=special_function_with_opt>\n<parameter=arg1>\n1\n"
                    "</parameter>\n<parameter=arg2>\n2\n</parameter>\n</function>\n</tool_call>", "Let me call it.\n", TWO),
    ("generic", '{"tool_calls": [{"name": "special_function", "arguments": {"arg1": 1}}]}', "", ONE),
]


def check(name: str, arguments: str) -> str | None:
    if USE.tool(name) is None:
        return f"no tool named {name!r} was offered"
    return None


def parse(fmt: str, pieces: list[str], reason: str | None = None, checker=check) -> list:
    parser = ToolCallParser(BY_NAME[fmt], USE, checker)
    events = [event for piece in pieces for event in parser.feed(piece)]
    return events + parser.finish(reason)


def summary(events: list) -> tuple[str, list]:
    """The text, and each call as (index, name, arguments, problem), after checking the stream's
    own promises: a call's first delta carries its id and name, its fragments add up to its
    arguments, and the ids of the deltas and the call agree."""
    fragments: dict[int, list[str]] = {}
    firsts: dict[int, ToolCallDelta] = {}
    calls = []
    for event in events:
        if isinstance(event, ToolCallDelta):
            if event.index not in firsts:
                assert event.id and event.name is not None
                firsts[event.index] = event
            else:
                assert event.id is None and event.name is None
            fragments.setdefault(event.index, []).append(event.arguments)
        elif isinstance(event, ToolCall):
            assert "".join(fragments[event.index]) == event.arguments
            assert (firsts[event.index].id, firsts[event.index].name) == (event.id, event.name)
            calls.append((event.index, event.name, event.arguments, event.problem))
    assert [index for index, *_ in calls] == list(range(len(calls)))
    return "".join(event for event in events if isinstance(event, str)), calls


def sweep(fmt: str, text: str) -> tuple[str, list]:
    """Parse `text` whole, one character at a time, and cut in two at every position: the same
    text and calls every way, which is returned."""
    whole = summary(parse(fmt, [text]))
    assert summary(parse(fmt, list(text))) == whole
    for cut in range(1, len(text)):
        assert summary(parse(fmt, [text[:cut], text[cut:]])) == whole, cut
    return whole


@pytest.mark.parametrize(("fmt", "output", "text", "calls"), REAL_OUTPUTS,
                         ids=[f"{fmt}-{n}" for n, (fmt, *_) in enumerate(REAL_OUTPUTS)])
def test_real_output_gives_the_calls_however_it_is_split(fmt, output, text, calls):
    found_text, found_calls = sweep(fmt, output)
    assert found_text == text
    assert [(name, json.loads(arguments), problem) for _, name, arguments, problem in found_calls] == [
        (name, arguments, None) for name, arguments in calls]


def test_arguments_stream_as_they_arrive():
    parser = ToolCallParser(BY_NAME["hermes"], USE, check)
    first = parser.feed('<tool_call>\n{"name": "get_time", "arguments": {"city": "Par')
    assert first == [ToolCallDelta(0, first[0].id, "get_time"), ToolCallDelta(0, arguments='{"city": "Par')]
    assert parser.feed('is"}}\n</tool_call>')[0] == ToolCallDelta(0, arguments='is"}')


def test_the_models_own_id_is_kept_where_it_comes_before_the_arguments():
    events = parse("mistral-small", ['[TOOL_CALLS]get_time[CALL_ID]abcdefghi[ARGS]{"city": "x"}'])
    assert events[-1].id == "abcdefghi"
    nemo = parse("mistral-nemo", ['[TOOL_CALLS][{"name": "get_time", "arguments": {}, "id": "123456789"}]'])
    assert len(nemo[-1].id) == 9 and nemo[-1].id.isalnum()  # written after the name: a fresh id of its form


def test_text_that_only_looks_like_a_marker_comes_out_as_text():
    assert summary(parse("hermes", ["Use <tool", "s> wisely"])) == ("Use <tools> wisely", [])
    assert summary(parse("hermes", ["Hello <tool_"])) == ("Hello <tool_", [])
    assert parse("hermes", ["abc <tool_"])[0] == "abc "  # only the possible marker is held back


def test_an_unknown_tool_and_a_failed_check_are_reported_not_dropped():
    _, calls = summary(parse("hermes", ['<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>']))
    assert calls == [(0, "rm_rf", "{}", "no tool named 'rm_rf' was offered")]
    _, calls = summary(parse("hermes", ['<tool_call>{"name": "get_time", "arguments": {"city": 3}}</tool_call>'],
                             checker=lambda name, arguments: "city: 3 is not a string"))
    assert calls[0][3] == "city: 3 is not a string"


def test_arguments_that_are_not_json_say_so():
    _, calls = summary(parse("devstral", ['[TOOL_CALLS]get_time[ARGS]{"city": Paris}']))
    assert calls[0][3].startswith("the arguments are not valid JSON")


def test_a_call_cut_off_by_the_token_limit_is_reported_with_what_it_had():
    text, calls = summary(parse("hermes", ['Sure.<tool_call>\n{"name": "get_time", "arguments": {"city": "Pa'],
                                reason="max_tokens"))
    assert text == "Sure."
    assert calls == [(0, "get_time", '{"city": "Pa', "the call was cut off before it was complete (max_tokens)")]


def test_a_call_cut_off_before_its_name_is_text():
    """The generic row's opener and a call's first key, then the token limit (the base Gemma
    under tool_choice auto): nothing a client could run or send back as history."""
    cut = '{"tool_calls": [{"na'
    assert summary(parse("generic", [cut], reason="max_tokens")) == (cut, [])
    assert summary(parse("generic", list(cut), reason="max_tokens")) == (cut, [])
    _, calls = summary(parse("generic", ['{"tool_calls": [{"name": "get_time", "arguments": {"ci'], reason="max_tokens"))
    assert calls == [(0, "get_time", '{"ci', "the call was cut off before it was complete (max_tokens)")]


@pytest.mark.parametrize("fmt", ["mistral-nemo", "granite"])
def test_an_object_without_a_name_after_a_call_reads_the_same_however_split(fmt):
    opener = BY_NAME[fmt].openers[0].text
    text, calls = sweep(fmt, opener + '[{"name": "special_function", "arguments": {"arg1": 1}}, {"x": 1}]')
    assert [name for _, name, _, _ in calls] == ["special_function"] and not text.strip()


def test_a_named_call_without_a_name_is_text():
    assert sweep("devstral", '[TOOL_CALLS][ARGS]{"a": 1}') == ('[TOOL_CALLS][ARGS]{"a": 1}', [])


def test_json_in_the_middle_of_a_llama_reply_is_the_users_text():
    """Llama 3's bare-JSON call counts only where the reply begins, as llama.cpp reads it."""
    text = 'Here is the person as JSON: {"name": "Alice", "age": 30}. Anything else?'
    assert sweep("llama3", text) == (text, [])
    assert summary(parse("llama3", [' {"name": "special_function", "parameters": {"arg1": 1}}']))[1] == [
        (0, "special_function", '{"arg1": 1}', None)]


def test_a_long_xml_parameter_streamed_in_small_pieces_is_read_whole():
    """Qwen3-Coder writes a parameter's value raw: a file's contents, say, which streams a few
    characters at a time, a closing tag's first characters among them now and then."""
    value = "</para" + "abcd" * 20_000 + "</parameter"[:-1]
    text = f"<tool_call>\n<function=special_function>\n<parameter=arg1>\n{value}\n</parameter>\n</function>\n</tool_call>"
    for size in (1, 4, 7):
        _, calls = summary(parse("qwen3-coder", [text[i:i + size] for i in range(0, len(text), size)],
                                 checker=lambda *_: None))
        assert calls == [(0, "special_function", json.dumps({"arg1": value}), None)]


def test_a_whole_call_that_names_no_function_is_text():
    """A complete object without a name is nothing a client could run, or send back as history
    (the server refuses a call without a name there)."""
    text = '<tool_call>\n{"arguments": {"city": "Oslo"}}\n</tool_call>'
    assert summary(parse("hermes", [text])) == (text, [])
    assert summary(parse("hermes", list(text))) == (text, [])


def test_an_opener_followed_by_no_call_is_text():
    assert summary(parse("hermes", ["<tool_call> I will not call anything"])) == (
        "<tool_call> I will not call anything", [])


def test_a_name_with_html_and_control_characters_is_only_a_name():
    name = '<script>alert(1)</script>\x00\x1b[31m'
    _, calls = summary(parse("devstral", [f'[TOOL_CALLS]{name}[ARGS]{{}}']))
    assert calls == [(0, name, "{}", f"no tool named {name!r} was offered")]
    _, calls = summary(parse("hermes", ['<tool_call>{"name": "<b>\\u0000", "arguments": {}}</tool_call>']))
    assert calls[0][1] == "<b>\x00" and calls[0][3].startswith("no tool named")


def test_very_long_text_without_markers_streams_in_bounded_time_and_memory():
    parser = ToolCallParser(BY_NAME["hermes"], USE, check)
    start, shown = time.monotonic(), 0
    for _ in range(20_000):
        shown += sum(len(event) for event in parser.feed("lorem ipsum <tool dolor sit amet, " * 3))
        assert len(parser._held) < len("<tool_call>")
    assert shown == 20_000 * 3 * len("lorem ipsum <tool dolor sit amet, ")
    assert time.monotonic() - start < 10


def test_deeply_nested_arguments_end_the_call_and_the_reply():
    text, calls = summary(parse("hermes", ['<tool_call>{"name": "get_time", "arguments": ' + "[" * 100_000,
                                           "]" * 100_000 + "}</tool_call> more"]))
    assert [(name, problem) for _, name, _, problem in calls] == [
        ("get_time", "the arguments are nested deeper than 64 levels")]
    assert text == ""
    _, calls = summary(parse("gemma4", ["<|tool_call>call:get_time{a:" + "[" * 1000]))
    assert calls[0][3] == "the arguments are nested deeper than 64 levels"


def test_a_name_that_never_ends_is_given_up_on():
    text, calls = summary(parse("devstral", ["[TOOL_CALLS]" + "x" * 100_000]))
    assert calls[0][3].startswith("the call's name did not end") and len(calls[0][1]) <= 256 and text == ""
