"""The welcome in an empty chat (offscreen, real widgets): what it says of the model, its
example prompts and its Get models link, by mouse and by keyboard, in both appearances."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication
from support.chat_helpers import WAIT_MS, browser, click_anchor, fragments, plain_text, shown_view

from app.engine.types import ReplyStatus
from app.ui.chat.theme import ChatTheme
from app.ui.chat.view import MessageView
from app.ui.chat.welcome import BASE_PROMPTS, GET_MODELS_HREF, INSTRUCT_PROMPTS, PROMPT_HREF, Welcome
from app.ui.widgets.colors import contrast
from app.ui.window import appearance

GEMMA = Welcome("Gemma 3 270M", loading=False, base_model=True)


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 1024, 640)


def test_an_empty_chat_says_the_model_is_a_base_model_and_offers_continuations(view):
    view.set_welcome(GEMMA)
    text = " ".join(plain_text(view).split())
    assert "Gemma 3 270M is ready." in text
    assert "base model" in text and "continues the text you give it" in text and "Get models" in text
    assert "Ctrl+Shift+G" in text
    assert all(prompt in plain_text(view) for prompt in BASE_PROMPTS)


@pytest.mark.parametrize("welcome, says", [
    (Welcome("Qwen3 1.7B Instruct"), "Qwen3 1.7B Instruct is ready."),
    (Welcome("Qwen3 1.7B Instruct", loading=True), "Loading Qwen3 1.7B Instruct…"),
    (Welcome(None), "No model is loaded. Choose one of your models, or Get models (Ctrl+Shift+G)."),
])
def test_an_instruct_model_loading_or_none_is_said_with_questions_to_ask(view, welcome, says):
    view.set_welcome(welcome)
    text = " ".join(plain_text(view).split())
    assert says in text and "base model" not in text
    assert all(prompt in plain_text(view) for prompt in INSTRUCT_PROMPTS)


def test_clicking_an_example_prompt_or_get_models_asks_the_window(view, qtbot):
    view.set_welcome(GEMMA)
    with qtbot.waitSignal(view.promptChosen, timeout=WAIT_MS) as chosen:
        click_anchor(qtbot, view, f"{PROMPT_HREF}2")
    assert chosen.args == [BASE_PROMPTS[2]]
    with qtbot.waitSignal(view.getModelsRequested, timeout=WAIT_MS):
        click_anchor(qtbot, view, GET_MODELS_HREF)


def test_the_prompts_can_be_chosen_from_the_keyboard(view, qtbot):
    view.set_welcome(Welcome("Qwen3 1.7B Instruct"))
    text_browser = browser(view)
    text_browser.setFocus()
    chosen = []
    view.promptChosen.connect(chosen.append)
    for _ in range(6):  # Tab moves from link to link
        qtbot.keyClick(text_browser, Qt.Key.Key_Tab)
        if text_browser.textCursor().selectedText() == INSTRUCT_PROMPTS[1]:
            break
    assert text_browser.textCursor().selectedText() == INSTRUCT_PROMPTS[1]
    qtbot.keyClick(text_browser, Qt.Key.Key_Return)
    assert chosen == [INSTRUCT_PROMPTS[1]]


def test_a_model_name_is_shown_as_text_never_as_markup(view):
    view.set_welcome(Welcome('<img src="file:///etc/passwd"><b>bold</b>\n' + "m" * 10_000, base_model=True))
    assert '<img src="file:///etc/passwd"><b>bold</b>' in plain_text(view)
    assert not any(fmt.isImageFormat() for _text, fmt in fragments(view))
    assert "m" * 80 not in plain_text(view) and "m…" in plain_text(view)  # shortened to a line


def test_the_welcome_goes_with_the_first_message_and_comes_back_for_an_empty_chat(view):
    view.set_welcome(GEMMA)
    view.add_message(MessageView(1, "user", "Once upon a time"))
    assert "Start a conversation" not in plain_text(view) and "Once upon a time" in plain_text(view)
    view.begin_reply(2)
    view.finish_reply("there was a hearth.", None, ReplyStatus.COMPLETE)
    view.set_welcome(Welcome("Gemma 3 270M", loading=True))  # a model loads beside a conversation
    assert "Start a conversation" not in plain_text(view)

    view.set_messages([])  # a new chat
    assert "Loading Gemma 3 270M…" in plain_text(view)
    view.begin_reply(3)  # e.g. a reply to a message the window has not shown yet
    assert "Start a conversation" not in plain_text(view)
    view.set_messages([MessageView(1, "user", "hi")])
    view.set_welcome(None)
    view.set_messages([])
    assert plain_text(view).strip() == ""


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_welcome_reads_well_in_both_appearances(view, qapp, palette):
    original = QPalette(qapp.palette())
    try:
        QApplication.setPalette(appearance.dark_palette() if palette == "dark" else appearance.light_palette())
        view.set_welcome(GEMMA)
        theme = ChatTheme.from_palette(view.palette())
        base = view.palette().color(QPalette.ColorRole.Base)
        assert contrast(QColor(theme.render.muted), base) >= 4.5  # the explanation
        assert contrast(QColor(theme.render.link), theme.bubble) >= 4.5  # a prompt on its card
        assert contrast(QColor(theme.render.link), base) >= 4.5  # Get models
        link = next(fmt for text, fmt in fragments(view) if text == BASE_PROMPTS[0])
        assert link.foreground().color().name() == theme.render.link
    finally:
        QApplication.setPalette(original)
