"""The whole path of an image in the window (#30), on the real engine: the tiny vision pair (a
tiny language model with its projector beside it, as a downloaded pair sits in a folder: tests/
support/model_files/tiny_vision.py) loaded in its own process as a user loads a model file, its
projector found beside it or chosen in the model's settings; a picture pasted, sent, read by
llama.cpp's multimodal library (the prompt grows by the projector's image tokens), shown as a
thumbnail; Regenerate reads the image again; the conversation exported to JSON and imported
back shows its image.

Real parts throughout: the window and its owners as the application assembles them, the
engine's child process, libmtmd, the store's image files."""

from __future__ import annotations

import pytest
from image_window import chip_names, paste, picture
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.chat_helpers import fragments
from support.model_files.tiny_vision import ensure_tiny_vision_pair
from support.window_stack import WINDOW_SIZE, ModelStack, Shown, WindowStack

from app.owners.settings import ModelSettings

WAIT_MS = 60_000
N_CTX = 512
SHORT = dict(temperature=0.0, max_tokens=4, seed=1)


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


@pytest.fixture(params=["chosen", "beside"])
def hearth(request, qtbot, tmp_path, pair):
    """The window with the pair loaded, its projector chosen in the model's settings (as a user
    who picked the file) or left to be found beside the model."""
    chosen = str(pair.projector) if request.param == "chosen" else None
    model_stack = ModelStack.start(tmp_path, model_settings={pair.model.name: ModelSettings(n_ctx=N_CTX, mmproj=chosen)})
    stack = WindowStack.open(qtbot, model_stack, tmp_path, shown=Shown.EXPOSED, size=WINDOW_SIZE)
    model_stack.load(qtbot, pair.model, WAIT_MS)
    models = model_stack.models
    models.update_settings(models.settings.with_changes(sampling=models.settings.sampling.with_changes(**SHORT)))
    yield stack
    stack.close()


def send(qtbot, stack: WindowStack, text: str):
    with qtbot.waitSignal(stack.session.replyFinished, timeout=WAIT_MS) as finished:
        stack.type_and_send(text)
    return finished.args[0]


def thumbnail_names(stack: WindowStack) -> list[str]:
    return [fmt.toolTip() for _text, fmt in fragments(stack.window.chat) if fmt.isImageFormat()]


def test_a_pasted_image_is_read_by_the_real_vision_pair_shown_regenerated_exported_and_imported(
        qtbot, hearth, pair, tmp_path):
    window, session = hearth.window, hearth.session
    loaded = hearth.model_stack.models.current
    assert loaded.projector == pair.projector, "the projector is loaded with the model"
    assert window.composer.images.attach_button.isEnabled()

    plain = send(qtbot, hearth, "Hello")
    window.new_chat()
    paste(qtbot, window, picture(200, 150, 210))
    assert chip_names(window) == ["Image 1 of 1, 200 × 150"]
    with_image = send(qtbot, hearth, "Hello")
    # The same words with an image before them: the prompt holds the image's tokens as well.
    assert with_image.stats.prompt_tokens >= plain.stats.prompt_tokens + pair.image_tokens
    [question, reply] = session.messages()
    assert len(question.images) == 1 and reply.status == "complete"
    assert thumbnail_names(hearth) == ["Image 1 of 1, 200 × 150"]

    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as again:
        QTest.keyClick(window.composer.edit, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    assert again.args[0].stats.prompt_tokens >= pair.image_tokens and again.args[0].status == "complete"
    assert thumbnail_names(hearth) == ["Image 1 of 1, 200 × 150"]

    exported = tmp_path / "with-image.json"
    window.write_export(session.conversation_id, "json", exported)
    with qtbot.waitSignal(window.importFinished, timeout=WAIT_MS) as imported:
        window.import_conversation(exported)
    assert imported.args[0] is not None and session.conversation_id == imported.args[0]
    assert session.messages()[0].images == question.images
    assert thumbnail_names(hearth) == ["Image 1 of 1, 200 × 150"]
