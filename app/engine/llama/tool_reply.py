"""One reply's tools on llama.cpp: the family's call syntax read from the template, the prompt
rendered with the tools (or the system note), the grammar that holds calls and structured
output to their schemas, the special tokens whose text the reply must show, and the reply's
text parsed into calls as it streams.

Made per reply by the Engine, before the reply's first token, so that anything wrong with the
tools (a tool choice naming no offered tool, a grammar llama.cpp refuses) fails the request
rather than the reply. Everything here is cached where it is costly: the detection per
template (detection.py), the grammar text per request shape (grammar.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from ..templates.chat_template import ChatTemplate
from ..tools.detection import detect_format
from ..tools.formats import GEMMA_QUOTE, ArgumentNotation, ToolFormat
from ..tools.parsing import ToolCallParser, parsed_reply
from ..tools.tool_prompt import prompt_messages, template_tools
from ..tools.types import ToolUse
from ..tools.wire import call_problem
from ..types import ReplyStats
from .grammar import Grammar, reply_grammar


class ToolReply:
    """What a reply with tools (or a response format) needs beyond a plain one."""

    def __init__(self, template: ChatTemplate, use: ToolUse, special_tokens: dict[str, int]):
        self.use = use
        self._template = template
        self.format: ToolFormat | None = detect_format(template) if use.tools else None
        self.grammar: Grammar | None = reply_grammar(self.format, use)
        self.preserved = _marker_tokens(self.format, special_tokens) if use.calls_possible else frozenset()

    def prompt(self, messages: list[dict]) -> str:
        """The prompt for a reply to `messages`, tools and all."""
        return self._render(messages, add_generation_prompt=True)

    def finished(self, messages: list[dict]) -> str:
        """`messages` as a finished conversation (a saved state's text), tools and all."""
        return self._render(messages, add_generation_prompt=False)

    def _render(self, messages: list[dict], add_generation_prompt: bool) -> str:
        if self.format is None:
            return self._template.render(messages, add_generation_prompt)
        return self._template.render(prompt_messages(self.format, messages, self.use), add_generation_prompt,
                                     tools=template_tools(self.format, self.use))

    def parsed(self, events: Iterator[str | ReplyStats]) -> Iterator:
        """The reply's events with its calls read out of the text (as they are, where the reply
        cannot call a tool)."""
        if not self.use.calls_possible:
            return events
        parser = ToolCallParser(self.format, self.use, partial(call_problem, self.use))
        return parsed_reply(events, parser)


def _marker_tokens(fmt: ToolFormat | None, special_tokens: dict[str, int]) -> frozenset[int]:
    """The control tokens a call is written with ("[TOOL_CALLS]", "<|python_tag|>"): a reply
    shows no control token's text, but the parser must read these, as llama.cpp's server keeps
    a format's "preserved tokens". Found by looking up each piece of the format's few short
    markers, not by walking the vocabulary's thousands of control tokens at every reply."""
    if fmt is None:
        return frozenset()
    markers = {fmt.spelling, fmt.block_open, fmt.block_close, fmt.separator, fmt.call_end, fmt.id_marker,
               fmt.arguments_marker, *fmt.name_ends, *fmt.ignored_markers, *(opener.text for opener in fmt.openers)}
    if fmt.notation is ArgumentNotation.GEMMA:
        markers.add(GEMMA_QUOTE)  # inside the arguments: without its text, no string argument reads
    return frozenset(special_tokens[piece] for marker in markers for start in range(len(marker))
                     for end in range(start + 2, len(marker) + 1) if (piece := marker[start:end]) in special_tokens)
