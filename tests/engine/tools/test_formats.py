"""Each family's tool-call syntax, detected from the real template (never from a model name),
and what a reply is rendered with: the template's own tools, or the system note and a text
history for templates that know no tools; the grammar each row builds parses in llama.cpp.

The templates in tests/data/tool_templates/ are copied from llama.cpp's models/templates/
(llama-cpp-python's source distribution); the rest come from tests/data/families.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.templates.chat_template import ChatTemplate
from app.engine.tools.call_grammar import call_rules, trigger_patterns
from app.engine.tools.detection import detect_format
from app.engine.tools.formats import BY_NAME, FORMATS, GENERIC
from app.engine.tools.parsing import ToolCallParser
from app.engine.tools.tool_prompt import prompt_messages, template_tools
from app.engine.tools.types import Tool, ToolCall, ToolChoice, ToolChoiceMode, ToolUse

DATA = Path(__file__).resolve().parents[2] / "data"
FAMILIES = {entry["family"]: entry for entry in json.loads((DATA / "families.json").read_text(encoding="utf-8"))}
WEATHER = Tool("get_weather", "The weather in a city",
               {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"]})
USE = ToolUse(tools=(WEATHER, Tool("get_time", "The time", {"type": "object", "properties": {}})))
HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "abcdefghi", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "abcdefghi", "name": "get_weather", "content": "Sunny"},
]

# template -> (format, whether the tool list reaches the prompt through the template itself)
EXPECTED = {
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("hermes", True),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("hermes", True),
    "ibm-granite-granite-4.0.jinja": ("hermes", True),
    "Qwen3-Coder.jinja": ("qwen3-coder", True),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("llama3", True),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("mistral-nemo", True),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": ("mistral-small", True),
    "unsloth-mistral-Devstral-Small-2507.jinja": ("devstral", True),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("granite", True),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("command-r7b", True),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ("deepseek-r1", False),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("deepseek-v3.1", False),
    "openai-gpt-oss-120b.jinja": ("gpt-oss", True),
    "google-gemma-4-31B-it.jinja": ("gemma4", True),
    "google-gemma-2-2b-it.jinja": ("generic", False),
    "family:llama-3.1": ("llama3", True),
    "family:qwen3": ("hermes", True),
    "family:qwen3 (newer revision)": ("hermes", True),
    "family:phi-4-mini": ("phi4-mini", True),
    "family:gemma-3": ("generic", False),
    "family:phi-3": ("generic", False),
    "family:llama-2-chat": ("generic", False),
}


def template(key: str) -> ChatTemplate:
    if key.startswith("family:"):
        entry = FAMILIES[key.removeprefix("family:")]
        return ChatTemplate(entry["chat_template"], entry.get("bos_token") or "", entry.get("eos_token") or "")
    return ChatTemplate((DATA / "tool_templates" / key).read_text(encoding="utf-8"), "<s>", "</s>")


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_the_format_is_read_from_the_template(key):
    fmt = detect_format(template(key))
    assert (fmt.name, fmt.native) == EXPECTED[key]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_a_conversation_with_tools_and_their_history_renders(key):
    """Whatever the template does natively, the prompt carries the tools and the history."""
    chat = template(key)
    fmt = detect_format(chat)
    prompt = chat.render(prompt_messages(fmt, HISTORY, USE), tools=template_tools(fmt, USE))
    assert "get_weather" in prompt and "Sunny" in prompt and "Paris" in prompt


def test_every_row_is_exercised_by_a_real_template():
    assert {name for name, _ in EXPECTED.values()} == {row.name for row in FORMATS} | {GENERIC.name}


def test_detection_is_remembered_per_template_source():
    first = detect_format(template("family:qwen3"))
    assert detect_format(template("family:qwen3")) is first


def test_a_template_that_fails_or_renders_nothing_gets_the_generic_format():
    assert detect_format(ChatTemplate("{{ raise_exception('no') }}")) is GENERIC
    assert detect_format(ChatTemplate("")) is GENERIC


def test_native_templates_get_the_tools_and_the_messages_unchanged():
    fmt = detect_format(template("family:qwen3"))
    assert prompt_messages(fmt, HISTORY, USE) == HISTORY
    assert template_tools(fmt, USE) == USE.template_tools()


def test_templates_without_tools_get_a_system_note_and_a_text_history():
    chat = template("family:gemma-3")
    fmt = detect_format(chat)
    messages = prompt_messages(fmt, [{"role": "system", "content": "Be brief."}] + HISTORY, USE)
    assert template_tools(fmt, USE) is None
    assert messages[0]["content"].startswith("Be brief.\n\nYou can call the following tools")
    assert '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "..."' in messages[0]["content"]
    assert messages[2] == {"role": "assistant", "content": '{"tool_calls": [{"name": "get_weather", "arguments": '
                                                           '{"city": "Paris"}}]}'}
    assert json.loads(messages[3]["content"]) == {
        "tool_response": {"tool": "get_weather", "content": "Sunny", "tool_call_id": "abcdefghi"}}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    chat.render(messages)  # gemma insists that roles alternate


def test_a_tool_result_beside_a_user_turn_is_merged_into_it():
    fmt = detect_format(template("family:gemma-3"))
    messages = prompt_messages(fmt, HISTORY + [{"role": "user", "content": "And Rome?"}], USE)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"].endswith("\n\nAnd Rome?")


def test_phi4_mini_reads_the_tools_from_the_system_message():
    chat = template("family:phi-4-mini")
    fmt = detect_format(chat)
    prompt = chat.render(prompt_messages(fmt, HISTORY, USE), tools=template_tools(fmt, USE))
    assert '<|tool|>[{"name": "get_weather", "description": "The weather in a city"' in prompt
    assert '<|assistant|><|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>' in prompt


def test_a_template_that_writes_calls_but_not_tools_gets_a_note_in_its_own_syntax():
    fmt = detect_format(template("deepseek-ai-DeepSeek-V3.1.jinja"))
    note = prompt_messages(fmt, HISTORY, USE)[0]["content"]
    assert "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" in note
    assert prompt_messages(fmt, HISTORY, USE)[1:] == HISTORY


@pytest.mark.parametrize("fmt", FORMATS + (GENERIC,), ids=lambda fmt: fmt.name)
def test_what_a_row_writes_its_parser_reads_back(fmt):
    """The spelling (history text, the note's example, the grammar) and the parser agree."""
    calls = [("get_weather", '{"city": "Paris", "days": 2}', fmt.new_id()), ("get_time", "{}", fmt.new_id())]
    calls = calls if fmt.parallel_capable else calls[:1]
    parser = ToolCallParser(fmt, USE, lambda name, arguments: None)
    events = parser.feed(fmt.calls_text(calls)) + parser.finish()
    found = [(e.name, json.loads(e.arguments), e.problem) for e in events if isinstance(e, ToolCall)]
    assert found == [(name, json.loads(arguments), None) for name, arguments, _ in calls]
    assert not [e for e in events if isinstance(e, str)]


def test_ids_take_the_form_the_family_requires():
    assert len(BY_NAME["mistral-nemo"].new_id()) == 9 and BY_NAME["mistral-nemo"].new_id().isalnum()
    assert BY_NAME["hermes"].new_id().startswith("call_")


@pytest.mark.parametrize("fmt", FORMATS + (GENERIC,), ids=lambda fmt: fmt.name)
def test_trigger_patterns_find_the_call_and_capture_where_the_grammar_starts(fmt):
    import re

    call = fmt.calls_text([("get_weather", '{"city": "Paris"}', fmt.new_id())])
    patterns = trigger_patterns(fmt, USE)
    assert patterns
    starts = []
    for pattern in patterns:  # llama.cpp's convention: ^...$ matches the whole text, others are searched
        whole = pattern.startswith("^") and pattern.endswith("$")
        text = (" \n" if whole else "Let me check.\n") + call
        match = re.fullmatch(pattern, text) if whole else re.search(pattern, text)
        if match:
            starts.append((text, match.start(1)))
    assert starts
    text, start = min(starts, key=lambda hit: hit[1])
    starts = [start]
    assert starts and text[min(starts):].startswith(fmt.block_open or text[min(starts):][:1])
    assert trigger_patterns(fmt, ToolUse(tools=USE.tools, choice=ToolChoice(ToolChoiceMode.NONE))) == ()


@pytest.fixture(scope="module")
def vocab():
    llama_cpp = pytest.importorskip("llama_cpp")
    from support.model_files.tiny_models import ensure_tiny_models

    model, _ = ensure_tiny_models()["qwen3"]
    llm = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
    yield llama_cpp, llm._model.vocab
    llm.close()


@pytest.mark.parametrize("fmt", FORMATS + (GENERIC,), ids=lambda fmt: fmt.name)
@pytest.mark.parametrize("use", [
    USE, ToolUse(tools=USE.tools, parallel=False), ToolUse(tools=USE.tools, choice=ToolChoice(ToolChoiceMode.REQUIRED)),
    ToolUse(tools=USE.tools + (Tool('od"d\n<b>name'),), choice=ToolChoice(ToolChoiceMode.FUNCTION, 'od"d\n<b>name')),
], ids=["auto", "single", "required", "named-hostile"])
def test_the_call_grammar_parses_in_llama_cpp(vocab, fmt, use):
    llama_cpp, handle = vocab
    grammar = call_rules(fmt, use, lambda tool: "arguments") + 'arguments ::= "{" [^}]* "}"\n'
    sampler = llama_cpp.llama_sampler_init_grammar(handle, grammar.encode(), b"root")
    assert sampler, grammar
    llama_cpp.llama_sampler_free(sampler)
    refused = llama_cpp.llama_sampler_init_grammar(handle, b"root ::= broken-rule", b"root")
    assert not refused  # the check above would see a grammar llama.cpp refuses


@pytest.mark.parametrize("choice", [ToolChoice(ToolChoiceMode.REQUIRED),
                                    ToolChoice(ToolChoiceMode.FUNCTION, "get_weather")], ids=["required", "named"])
def test_a_grammar_from_the_first_token_lets_llama3_write_its_python_tag_first(choice):
    """Llama 3.1 writes a call bare or after `<|python_tag|>` (a control token): a grammar that
    holds the reply from its first token must let the model choose either, or it pushes a
    model that writes the tag off its call."""
    import ctypes

    llama_cpp = pytest.importorskip("llama_cpp")
    from support.model_files.tiny_models import ensure_tiny_models

    model, _ = ensure_tiny_models()["llama-3.1"]
    llm = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
    try:
        tag, brace = 128010, llm.tokenize(b"{", add_bos=False, special=False)[0]
        grammar = call_rules(BY_NAME["llama3"], ToolUse(tools=USE.tools, choice=choice), lambda tool: "arguments")
        grammar += 'arguments ::= "{" [^}]* "}"\n'
        sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode(), b"root")
        tokens = (tag, brace, 128009)  # <|python_tag|>, "{", <|eot_id|>
        data = (llama_cpp.llama_token_data * 3)(*(llama_cpp.llama_token_data(t, 1.0, 0.0) for t in tokens))
        candidates = llama_cpp.llama_token_data_array(data, 3, -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
        llama_cpp.llama_sampler_free(sampler)
        assert llm._model.token_get_text(tag) == "<|python_tag|>"
        assert [data[i].logit > -1e30 for i in range(3)] == [True, True, False]  # the tag, "{"; not end of turn
    finally:
        llm.close()


def test_llamas_python_tag_also_starts_the_lazy_grammar():
    """The tag the grammar's preamble accepts is a trigger too, so a call written after it is
    held to its schema under tool_choice auto, not only parsed."""
    import re

    patterns = trigger_patterns(BY_NAME["llama3"], USE)
    text = 'Checking.<|python_tag|>{"name": "get_weather"'
    assert any(not p.startswith("^") and (m := re.search(p, text)) and text[m.start(1):].startswith("<|python_tag|>")
               for p in patterns)
