"""Tools in the prompt, byte for byte as Hugging Face renders them (issue #26's first part).

Every template in tests/data/families.json that reads a `tools` list (Llama 3.1, Qwen3 and its
newer revision, Phi-4-mini) renders two conversations with two tools: tools offered, and a
call the model made with its result. The references are transformers' own rendering
(`apply_chat_template(messages, tools=TOOLS)`, tests/data/make_reference_renderings.py); Hearth
must produce the same bytes, also when a call's arguments arrive as a JSON text (OpenAI's wire
form) rather than as an object.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from app.engine.templates.chat_template import ChatTemplate

DATA = Path(__file__).resolve().parents[1] / "data"
FAMILIES = {entry["family"]: entry for entry in json.loads((DATA / "families.json").read_text(encoding="utf-8"))}
REFERENCES = json.loads((DATA / "reference_renderings.json").read_text(encoding="utf-8"))
CASES = [(family, name) for family, cases in REFERENCES["tool_renderings"].items() for name in cases]


def template(family: str) -> ChatTemplate:
    entry = FAMILIES[family]
    return ChatTemplate(entry["chat_template"], entry.get("bos_token") or "", entry.get("eos_token") or "")


def test_every_template_that_reads_tools_has_references():
    readers = sorted(family for family, entry in FAMILIES.items() if "tools" in entry["chat_template"])
    assert readers == sorted(REFERENCES["tool_renderings"]) and len(readers) >= 3


@pytest.mark.parametrize(("family", "name"), CASES)
def test_tools_render_as_hugging_face_renders_them(family, name):
    reference = REFERENCES["tool_renderings"][family][name]
    assert template(family).render(reference["messages"], tools=REFERENCES["tools"]) == reference["text"]


@pytest.mark.parametrize("family", sorted({family for family, name in CASES if name == "tool_call_and_result"}))
def test_arguments_sent_as_json_text_render_as_the_object_they_encode(family):
    reference = REFERENCES["tool_renderings"][family]["tool_call_and_result"]
    messages = copy.deepcopy(reference["messages"])
    for message in messages:
        for call in message.get("tool_calls", []):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"], ensure_ascii=False)
    assert isinstance(messages[2]["tool_calls"][0]["function"]["arguments"], str)
    assert template(family).render(messages, tools=REFERENCES["tools"]) == reference["text"]


def test_arguments_that_are_not_json_stay_as_they_were_sent():
    messages = [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "add", "arguments": "{not json"}}]},
                {"role": "tool", "tool_call_id": "c", "name": "add", "content": "3"}]
    rendered = template("qwen3").render(messages, tools=REFERENCES["tools"])
    assert "{not json" in rendered


def test_no_tools_renders_as_before():
    """Without tools the context holds `tools: None`, as Hugging Face passes it: the existing
    references (rendered that way) still match."""
    entry = REFERENCES["renderings"]["llama-3.1"]["system_multi_turn"]
    assert template("llama-3.1").render(REFERENCES["conversations"]["system_multi_turn"]) == entry["text"]
