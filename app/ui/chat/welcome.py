"""What an empty chat says: which model is there, what it is good for, and how to begin.

A first-time user meets Hearth's default model, Gemma 3 270M, which is a base model: it has no
chat template of its own, so it continues text instead of answering, and rambles. Left
unsaid, that reads as "Hearth is broken". The welcome says so and points to Get models for an
instruct model, and offers example prompts that suit the model: continuations for a base
model, questions and tasks for an instruct one.

The model's name comes from a file's metadata, so it is untrusted: it is shown one line long,
printable and HTML-escaped.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtGui import QTextBlockFormat, QTextCursor, QTextDocument

from ...common.text import shorten
from ..widgets.shortcuts import SHORTCUTS
from .theme import ChatTheme

# The window's shortcut for Get models (its File menu); said here so that a new user learns it.
GET_MODELS_HREF = "hearth:get-models"
PROMPT_HREF = "hearth:prompt/"
TOP_ROOM_PX = 40

INSTRUCT_PROMPTS = (
    "Explain how a rainbow forms, in three sentences.",
    "Write a Python function that tells whether a word is a palindrome.",
    "Suggest five names for a cosy neighbourhood café.",
    "Summarise the plot of Hamlet in one paragraph.",
)
# A base model continues what it is given: beginnings of texts, not questions.
BASE_PROMPTS = (
    "Once upon a time, in a village at the edge of a great forest,",
    "The three things everyone should know about volcanoes are",
    "A simple recipe for tomato soup. Ingredients:",
    "Dear diary, today was the strangest day of my life.",
)


@dataclass(frozen=True)
class Welcome:
    """What the window knows of the model, for the empty chat to say.

    model_name: the loaded model's name, or the one loading; None when there is none.
    loading: the model is still being loaded.
    base_model: the model has no chat template of its own (it continues text, and rambles).
    """

    model_name: str | None
    loading: bool = False
    base_model: bool = False

    def prompts(self) -> tuple[str, ...]:
        """The example prompts that suit the model."""
        return BASE_PROMPTS if self.base_model and self.model_name is not None else INSTRUCT_PROMPTS


def write_welcome(document: QTextDocument, welcome: Welcome, theme: ChatTheme) -> None:
    """Write the welcome into an empty document, some way down from its top."""
    cursor = QTextCursor(document)
    cursor.insertHtml(welcome_html(welcome, theme))
    # Qt ignores the first block's top margin: room above the heading is a block of its own.
    cursor.movePosition(QTextCursor.MoveOperation.Start)
    cursor.insertBlock(cursor.blockFormat(), cursor.charFormat())
    cursor.movePosition(QTextCursor.MoveOperation.Start)
    room = QTextBlockFormat()
    room.setLineHeight(TOP_ROOM_PX, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    cursor.setBlockFormat(room)


def welcome_html(welcome: Welcome, theme: ChatTheme) -> str:
    """The welcome as HTML for the chat pane's document, in the pane's colours."""
    render = theme.render
    muted = f"color:{render.muted}"
    get_models = f'<a href="{GET_MODELS_HREF}" style="color:{render.link}">Get models</a>'
    keys = f'<span style="{muted}">({SHORTCUTS["get_models"]})</span>'
    parts = ['<h2 style="margin-bottom:10px">Start a conversation</h2>']
    name = None if welcome.model_name is None else f"<b>{html.escape(shorten(welcome.model_name))}</b>"
    if name is None:
        parts.append(f"<p>No model is loaded. Choose one of your models, or {get_models} {keys}.</p>")
    elif welcome.loading:
        parts.append(f"<p>Loading {name}…</p>")
    else:
        parts.append(f"<p>{name} is ready.</p>")
    if name is not None and welcome.base_model:
        parts.append(
            f'<p style="{muted}">It is a <i>base model</i>: it has no chat template of its own, so it does not '
            "answer what you ask. It continues the text you give it, and tends to ramble. For a model that "
            f"answers and follows instructions, {get_models} {keys} and choose an <i>instruct</i> model.</p>"
        )
    lead = "Begin a text for it to continue:" if welcome.prompts() is BASE_PROMPTS else "Try one of these:"
    parts.append(f'<p style="margin-top:16px; {muted}">{lead}</p>')
    parts.append(_prompt_cards(welcome.prompts(), theme))
    parts.append(
        f'<p style="margin-top:14px; {muted}">{SHORTCUTS["get_models"]}&nbsp;Get models&nbsp;&nbsp;·&nbsp;&nbsp;'
        f'{SHORTCUTS["shortcuts"]}&nbsp;Keyboard shortcuts&nbsp;&nbsp;·&nbsp;&nbsp;Shift+Enter&nbsp;A new line in the message</p>'
    )
    return "".join(parts)


def _prompt_cards(prompts: tuple[str, ...], theme: ChatTheme) -> str:
    """The prompts as links in a grid of tinted cards, two a row."""
    cells = [
        f'<td width="50%" bgcolor="{theme.bubble.name()}" style="padding:10px">'
        f'<a href="{PROMPT_HREF}{index}" style="color:{theme.render.link}; text-decoration:none">'
        f"{html.escape(prompt)}</a></td>"
        for index, prompt in enumerate(prompts)
    ]
    rows = "".join(f"<tr>{''.join(cells[i:i + 2])}</tr>" for i in range(0, len(cells), 2))
    return f'<table width="100%" cellspacing="8" cellpadding="10" style="margin-left:-8px">{rows}</table>'
