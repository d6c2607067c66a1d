"""Conversations as Markdown, to read or share: the branch shown, saying where other versions
exist (the JSON export, exchange.py, keeps every version).

Message text is Markdown already and goes in as it is. A message's images are named (each on
a line of its own, before its text: "[Image: 640 × 480 PNG, sha256 1a2b3c4d]", its brackets
escaped), not embedded: the JSON export keeps them. What a model or a tool wrote inside a
call or a result is shown as written, but must not break the page's structure: arguments and
results go in fenced blocks whose fence is longer than any run of backticks inside them, and
names and ids in code spans on one line. Nothing is escaped into HTML: it is Markdown text.
"""

from __future__ import annotations

import re

from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStatus, StopReason
from app.images.image import ImageRef
from app.store.image_links import named
from app.store.records import Conversation, Source, StoredMessage

_BACKTICKS = re.compile(r"`+")
_LINE_BREAKERS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def to_markdown(conversation: Conversation, messages: list[StoredMessage], other_versions: int = 0) -> str:
    """The branch shown: the title as the heading and each message under its role; metadata
    (a message's version among its siblings included) in small italics. A reply's tool calls
    follow its text; a tool's result is a message of its own, under the tool's name; a question's
    images are named before its text, and its sources (the documents its reply read) are listed
    under it."""
    parts = [f"# {conversation.title or 'Untitled conversation'}", f"*{_details(conversation)}*"]
    if other_versions:
        parts.append(f"*This is the branch shown in Hearth; {other_versions} message{'s' if other_versions != 1 else ''}"
                     " on other branches are not in it (export as JSON to keep every version).*")
    if conversation.system_prompt:
        parts += ["## System prompt", conversation.system_prompt]
    for message in messages:
        result = message.tool_result
        if result is not None:
            parts.append(f"## Tool result: {code_span(result.name)}{' (error)' if result.error else ''}")
            parts.append(fenced(message.content))
        else:
            parts.append(f"## {message.role.capitalize()}")
            parts += [image_line(ref) for ref in message.images]
            if message.content or not (message.tool_calls or message.images):
                parts.append(message.content)
            for call in message.tool_calls:
                parts += _call(call)
            if message.sources:
                parts.append(_sources(message.sources))
        details = _message_details(message)
        if details:
            parts.append(f"*{details}*")
    return "\n\n".join(parts) + "\n"


def image_line(ref: ImageRef) -> str:
    """An image named on a line of its own. The brackets are escaped: "[…]" alone would be a
    link wherever a message's text defines a reference of that name."""
    return f"\\[Image: {named(ref)}\\]"


def _sources(sources: tuple[Source, ...]) -> str:
    """A question's sources, as its reply cites them: each file's path (as code: any text) and page."""
    return "Sources:\n\n" + "\n".join(f"{number}. {code_span(one_line(source.path))}"
                                        + (f", page {source.page}" if source.page else "")
                                        for number, source in enumerate(sources, start=1))


def _call(call: ToolCall) -> list[str]:
    """A call: the tool's name and the call's id, then its arguments as the model wrote them."""
    parts = [f"**Tool call** {code_span(call.name)} · {code_span(call.id)}", fenced(call.arguments, "json")]
    if call.problem is not None:
        parts.append(f"*Not run as written:* {one_line(call.problem)}")
    return parts


def fenced(text: str, info: str = "") -> str:
    """text as a fenced code block that nothing in it can close."""
    fence = "`" * max(3, 1 + max(map(len, _BACKTICKS.findall(text)), default=0))
    return f"{fence}{info}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """text as inline code on one line, whatever backticks or line breaks it holds."""
    text = one_line(text)
    ticks = "`" * (1 + max(map(len, _BACKTICKS.findall(text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def one_line(text: str) -> str:
    """text with line breaks and control characters made spaces, and spaces collapsed: what
    a heading, a code span or a paragraph's first line can hold without ending early."""
    return " ".join(_LINE_BREAKERS.sub(" ", text).split())


def _details(conversation: Conversation) -> str:
    details = [f"Created {conversation.created_at[:16].replace('T', ' ')} UTC"]
    if conversation.model:
        details.append(f"model {conversation.model}")
    return " · ".join(details)


def _message_details(message: StoredMessage) -> str:
    details = [f"version {message.version} of {message.versions}"] if message.versions > 1 else []
    if message.tool_result is not None:
        details.append(f"answers {code_span(message.tool_result.call_id)}")
    if message.model:
        details.append(message.model)
    stats = message.stats
    if stats is not None:
        if stats.completion_tokens is not None:
            details.append(f"{stats.completion_tokens} tokens")
        if stats.tokens_per_s:
            details.append(f"{stats.tokens_per_s:.1f} tokens/s")
        if stats.ttft_s:
            details.append(f"first token after {stats.ttft_s:.2f} s")
    if stats is not None and stats.stop_reason is StopReason.INTERRUPTED:
        details.append(StopReason.INTERRUPTED.words)
    elif message.status is not ReplyStatus.COMPLETE:
        details.append(message.status.value)
    return " · ".join(details)
