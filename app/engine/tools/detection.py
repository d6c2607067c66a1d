"""Which tool-call syntax a chat template speaks, read from the template itself.

As llama.cpp's autoparser does, the template renders a probe conversation (a user message, an
assistant message with one known call, its result) with one known tool, and the rendering
says the rest: whether the tool list reached the prompt (its description is there), which
family's syntax the call was written in (the first row whose signature matches the text after
the user message), and whether the result was written. A model's name is never consulted: a
fine-tune keeps its base's template, and a renamed file keeps its template too.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from ..templates.chat_template import ChatTemplate
from ..templates.limits import TemplateError
from .formats import FORMATS, GENERIC, ToolFormat

PROBE_NAME = "hearth_probe"
PROBE_DESCRIPTION = "hearth_probe_description"
PROBE_ID = "hearthpr0"  # nine alphanumerics: Mistral's templates refuse any other id
PROBE_TOOLS = [{"type": "function", "function": {
    "name": PROBE_NAME, "description": PROBE_DESCRIPTION,
    "parameters": {"type": "object", "properties": {"hearth_arg": {"type": "string"}}, "required": ["hearth_arg"]}}}]
_USER, _RESULT = "hearth_user", "hearth_result"
_CALL = {"role": "assistant", "content": "", "tool_calls": [
    {"id": PROBE_ID, "type": "function", "function": {"name": PROBE_NAME, "arguments": {"hearth_arg": "hearth_value"}}}]}
_RESULT_MESSAGE = {"role": "tool", "tool_call_id": PROBE_ID, "name": PROBE_NAME, "content": _RESULT}
# Tried in order until one renders: some templates insist on a result after a call, others
# refuse the tool role.
_PROBES = (
    [{"role": "user", "content": _USER}, _CALL, _RESULT_MESSAGE],
    [{"role": "user", "content": _USER}, _CALL],
)
_CACHE_LIMIT = 64
_detected: dict[str, ToolFormat] = {}


def detect_format(template: ChatTemplate) -> ToolFormat:
    """The template's tool-call format, with what the template does natively (`native`,
    `renders_calls`, `renders_results`); templates that render no known call get GENERIC.
    Remembered per template source: a template is compiled once and asked on every reply."""
    found = _detected.get(template.source)
    if found is None:
        found = _detect(template)
        if len(_detected) >= _CACHE_LIMIT:
            _detected.pop(next(iter(_detected)))
        _detected[template.source] = found
    return found


def _detect(template: ChatTemplate) -> ToolFormat:
    rendered = _render_probe(template)
    native = PROBE_DESCRIPTION in rendered
    after_user = rendered[rendered.find(_USER) + len(_USER):] if _USER in rendered else ""
    renders_results = _RESULT in after_user
    for row in FORMATS:
        if row.signature and re.search(row.signature, after_user):
            return replace(row, native=native, renders_calls=True, renders_results=renders_results)
    for row in FORMATS:
        if row.source_hint and row.source_hint in template.source:
            if row.tools_in_system_field:
                native = _reads_system_tools(template)
            return replace(row, native=native, renders_calls=False, renders_results=renders_results)
    return GENERIC


def _render_probe(template: ChatTemplate) -> str:
    for messages in _PROBES:
        try:
            return template.render(messages, add_generation_prompt=True, tools=PROBE_TOOLS)
        except TemplateError:
            continue
    return ""


def _reads_system_tools(template: ChatTemplate) -> bool:
    """Phi-4-mini's way: the tool list as JSON text in the system message's `tools` field."""
    messages = [{"role": "system", "content": "", "tools": json.dumps([PROBE_TOOLS[0]["function"]])},
                {"role": "user", "content": _USER}]
    try:
        return PROBE_DESCRIPTION in template.render(messages, add_generation_prompt=True)
    except TemplateError:
        return False
