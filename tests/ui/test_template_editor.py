"""The chat-template editor: debounced live preview, visible tokens, inline errors, Reset, Save."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt

from app.engine.templates.chat_template import fallback_source
from app.ui.parameters.template_editor import NEWLINE_MARK, PREVIEW_DELAY_MS, TemplateEditor

SIMPLE = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}\n{% endfor %}"
OWN = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"


@pytest.fixture
def editor_for(qtbot):
    def make(info, override=None):
        editor = TemplateEditor(info, override)
        qtbot.addWidget(editor)
        return editor
    return make


def test_opens_with_the_models_fallback_and_its_exact_prompt(editor_for, gemma_info):
    editor = editor_for(gemma_info)
    assert editor.source() == fallback_source("gemma")
    assert "gemma" in editor.origin_label.text()
    prompt = editor.rendered_prompt()
    assert prompt.startswith("<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello! Who are you?<end_of_turn>\n")
    assert prompt.endswith("<start_of_turn>model\n")
    shown = editor.preview.toPlainText()
    assert f"<start_of_turn>user{NEWLINE_MARK}" in shown  # line breaks made visible
    assert "background-color" in editor.preview.toHtml()  # special tokens marked


def test_the_preview_follows_the_text_after_a_pause(editor_for, gemma_info, qtbot):
    editor = editor_for(gemma_info)
    before = editor.rendered_prompt()
    editor.source_edit.setPlainText(SIMPLE)
    assert editor.rendered_prompt() == before  # not on every keystroke
    qtbot.waitUntil(lambda: editor.rendered_prompt() != before, timeout=PREVIEW_DELAY_MS * 10)
    assert editor.rendered_prompt() == (
        "<bos><system>You are a helpful assistant.<eos>\n<user>Hello! Who are you?<eos>\n"
        "<assistant>I'm an assistant running on your computer.<eos>\n<user>What is 2 + 2?<eos>\n"
    )
    assert "your edited template" in editor.origin_label.text()


@pytest.mark.parametrize("broken, message", [
    ("{% for m in messages %}{{ m.content }", "syntax error on line 1"),
    ("{{ raise_exception('roles must alternate') }}", "rejected this conversation: roles must alternate"),
    ("{{ messages[0].content.nonexistent() }}", "The chat template failed"),
    # Deep nesting used to escape as IndentationError/RecursionError: a crash report, no message.
    ("{% if true %}" * 100 + "x" + "{% endif %}" * 100, "nested more than 32 levels deep"),
    ("{% for i in range(1) %}" * 25 + "x" + "{% endfor %}" * 25, "nested too deeply or too complex to compile"),
    ("{{ " + "1 + " * 20000 + "1 }}", "nested too deeply or too complex to compile"),
    ("{{ " + "(" * 500 + "1" + ")" * 500 + " }}", "nested more than 32 levels deep"),
    ("{% set a = 'x' * 3000000 %}{{ a ~ a }}", "absurdly large value"),
])
def test_a_broken_template_shows_the_error_inline(editor_for, gemma_info, qtbot, broken, message):
    editor = editor_for(gemma_info)
    editor.source_edit.setPlainText(broken)
    qtbot.waitUntil(lambda: not editor.error_label.isHidden(), timeout=PREVIEW_DELAY_MS * 10)
    assert message in editor.error_label.text()
    assert editor.rendered_prompt() is None and not editor.save_button.isEnabled()

    editor.source_edit.setPlainText(SIMPLE)  # fixing it clears the error
    qtbot.waitUntil(lambda: editor.error_label.isHidden(), timeout=PREVIEW_DELAY_MS * 10)
    assert editor.save_button.isEnabled()


def test_an_error_quoting_markup_is_shown_as_plain_text_on_one_line(editor_for, gemma_info, qtbot):
    editor = editor_for(gemma_info)
    editor.source_edit.setPlainText("{{ raise_exception('<b>bold</b>\\n' * 1000) }}")
    qtbot.waitUntil(lambda: not editor.error_label.isHidden(), timeout=PREVIEW_DELAY_MS * 10)
    shown = editor.error_label.text()
    assert shown.startswith("The chat template rejected this conversation: <b>bold</b> <b>bold</b>")
    assert shown.endswith("…") and "\n" not in shown and len(shown) < 300
    assert editor.error_label.textFormat() == Qt.PlainText  # the tags are shown, not applied


def test_reset_restores_the_models_own_template(editor_for, gemma_info, qtbot):
    info = replace(gemma_info, chat_template=OWN)
    editor = editor_for(info, override=SIMPLE)
    assert editor.source() == SIMPLE and editor.reset_button.isEnabled()
    editor.reset_button.click()
    assert editor.source() == OWN and not editor.reset_button.isEnabled()
    assert "model's own" in editor.origin_label.text()
    qtbot.waitUntil(lambda: (editor.rendered_prompt() or "").endswith("assistant:"), timeout=PREVIEW_DELAY_MS * 10)


def test_reset_restores_the_fallback_when_the_file_has_none(editor_for, gemma_info):
    editor = editor_for(gemma_info, override=SIMPLE)
    editor.reset()
    assert editor.source() == fallback_source("gemma")


def test_save_gives_the_override_or_none_for_the_models_own(editor_for, gemma_info, qtbot):
    editor = editor_for(gemma_info)
    editor.source_edit.setPlainText(SIMPLE)
    with qtbot.waitSignal(editor.templateOverrideChanged) as saved:
        editor.save_button.click()
    assert saved.args == [SIMPLE]

    editor = editor_for(gemma_info, override=SIMPLE)
    editor.reset()
    with qtbot.waitSignal(editor.templateOverrideChanged) as saved:
        editor.save_button.click()
    assert saved.args == [None]
