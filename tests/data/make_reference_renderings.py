"""Render every chat template in families.json with Hugging Face transformers' own code.

The output, tests/data/reference_renderings.json, is what the conformance suite compares
Hearth's prompts with byte for byte. It was produced with transformers 5.23.0 (jinja2 3.1.6),
through `transformers.utils.chat_template_utils.render_jinja_template`, the function that
`PreTrainedTokenizerBase.apply_chat_template` calls: the same sandboxed environment, globals
and filters, with `add_generation_prompt=True` and the family's `bos_token`/`eos_token` passed
the way a tokenizer passes its special-tokens map (left out when the family has none).

Templates that reject a system message (they call `raise_exception`) are rendered with the
system prompt folded into the first user message, "SYSTEM\\n\\nUSER", exactly as Hearth's
`app.engine.templates.chat_template.fold_system_prompt` does; such renderings are marked
`"system_folded": true`. With the current families.json no template needs it (Mistral v0.1's
and Llama 2's published templates take a system message, Gemma 3 folds it itself), but the
rule is kept so a new entry cannot silently get a different reference.

Templates that read a `tools` list (Llama 3.1, Qwen3, Phi-4-mini) are also rendered with
TOOLS and TOOL_CONVERSATIONS (tools offered; a call and its result), as `apply_chat_template(
messages, tools=TOOLS)` renders them: the "tool_renderings", with the messages each was
rendered from (Phi-4-mini's carry the tools in the system message, as its card shows).

Run it in a scratch environment (the test suite never imports transformers):

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install transformers==5.23.0 jinja2==3.1.6
    /tmp/refvenv/bin/python tests/data/make_reference_renderings.py
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import transformers
from transformers.utils.chat_template_utils import render_jinja_template

DATA = Path(__file__).resolve().parent
OUTPUT = DATA / "reference_renderings.json"

CONVERSATIONS = {
    # The main case: a system prompt and two user turns around an assistant reply, with
    # non-ASCII text and surrounding whitespace (some templates trim, others must not).
    "system_multi_turn": [
        {"role": "system", "content": "You are Hearth, a helpful assistant. Answer briefly."},
        {"role": "user", "content": "Hello! What is 2 + 2?"},
        {"role": "assistant", "content": "2 + 2 = 4."},
        {"role": "user", "content": "  Thanks. Now say « bonjour » in Japanese — 日本語で.\n"},
    ],
    # No system prompt: several templates insert their own default system turn.
    "no_system": [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
    ],
    # A reply that carried a reasoning block: Qwen3 strips it from history, others keep the text.
    "reasoning_in_history": [
        {"role": "system", "content": "Think step by step."},
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "<think>\n7 has no divisors but 1 and 7.\n</think>\n\nYes, 7 is prime."},
        {"role": "user", "content": "And 9?"},
    ],
}


# Tools, as OpenAI's `tools` array carries them and Hugging Face's `apply_chat_template(tools=)`
# takes them. Rendered only with the templates that read a `tools` list (the others ignore it).
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. « Zürich »"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        }, "required": ["city"]},
    }},
    {"type": "function", "function": {
        "name": "add", "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]},
    }},
]
TOOL_CALL = {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}
TOOL_CONVERSATIONS = {
    # Tools offered, no call yet: the schemas in the prompt, as each template lays them out.
    "tools_offered": [
        {"role": "system", "content": "You are Hearth. Use a tool when it helps."},
        {"role": "user", "content": "What is the weather in Zürich?"},
    ],
    # A call the model made and its result, then the model's turn again.
    "tool_call_and_result": [
        {"role": "system", "content": "You are Hearth. Use a tool when it helps."},
        {"role": "user", "content": "What is the weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"},
    ],
}


def tool_messages(entry: dict, messages: list[dict]) -> list[dict]:
    """Phi-4-mini reads its tools from the system message's `tools` field (a JSON text), not
    from `tools=`: the conversation carries them there as its model card shows."""
    if "message['tools']" not in entry["chat_template"] and 'message["tools"]' not in entry["chat_template"]:
        return messages
    system = dict(messages[0], tools=json.dumps([tool["function"] for tool in TOOLS], ensure_ascii=False))
    return [system] + messages[1:]


def reads_tools(entry: dict) -> bool:
    return "tools" in entry["chat_template"]


def fold_system_prompt(messages: list[dict]) -> list[dict]:
    """The same rule as app.engine.templates.chat_template.fold_system_prompt (copied: no app imports here)."""
    if not messages or messages[0]["role"] != "system":
        return messages
    system, rest = messages[0]["content"], messages[1:]
    for index, message in enumerate(rest):
        if message["role"] == "user":
            merged = dict(message, content=f"{system}\n\n{message['content']}")
            return rest[:index] + [merged] + rest[index + 1:]
    return [{"role": "user", "content": system}] + rest


def render(entry: dict, messages: list[dict], tools: list[dict] | None = None) -> str:
    special = {key: entry[key] for key in ("bos_token", "eos_token") if entry.get(key) is not None}
    rendered, _generation_indices = render_jinja_template(
        conversations=[messages], tools=tools, chat_template=entry["chat_template"], add_generation_prompt=True,
        **special
    )
    return rendered[0]


def main() -> None:
    families = json.loads((DATA / "families.json").read_text(encoding="utf-8"))
    renderings: dict[str, dict] = {}
    tool_renderings: dict[str, dict] = {}
    for entry in families:
        per_family = {}
        for name, messages in CONVERSATIONS.items():
            try:
                per_family[name] = {"text": render(entry, messages), "system_folded": False}
            except jinja2.TemplateError:  # raise_exception() in the template
                per_family[name] = {"text": render(entry, fold_system_prompt(messages)), "system_folded": True}
        renderings[entry["family"]] = per_family
        if reads_tools(entry):
            tool_renderings[entry["family"]] = {
                name: {"text": render(entry, tool_messages(entry, messages), TOOLS),
                       "messages": tool_messages(entry, messages)}
                for name, messages in TOOL_CONVERSATIONS.items()
            }
    document = {
        "generator": (
            f"transformers {transformers.__version__} render_jinja_template (jinja2 {jinja2.__version__}), "
            "add_generation_prompt=True; see tests/data/make_reference_renderings.py"
        ),
        "conversations": CONVERSATIONS,
        "renderings": renderings,
        "tools": TOOLS,
        "tool_renderings": tool_renderings,
    }
    OUTPUT.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    folded = [f"{family}/{name}" for family, r in renderings.items() for name, v in r.items() if v["system_folded"]]
    print(f"wrote {OUTPUT} ({len(renderings)} templates, {len(tool_renderings)} with tools); "
          f"system folded: {folded or 'none'}")


if __name__ == "__main__":
    main()
