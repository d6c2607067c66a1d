"""The Model section's Projector row (#30: a projector "paired automatically or chosen by the
user"): it names the projector beside the model, or says the model reads no images; a file
chosen with Choose… is checked at once, refused in ImageError's words when it is not this
model's projector (the setting unchanged), else kept as the model's `mmproj` setting and applied
on reload; "Use the one beside the model" forgets it; a server's model has no row.

The real panel over a ModelSession whose backends are scripted (the panel's job is showing and
editing the setting, not reading images: the real engine loading a chosen projector is
test_window_images_vision.py's), with real files: the tiny vision pair (tests/support/
model_files/tiny_vision.py), projectors written for another width, the default Gemma. The
file chooser is Qt's own dialog, driven as a user does (the path typed, Enter): the offscreen
platform has no native dialog, so QFileDialog shows Qt's widgets even where the desktop's own
would open for a user.
"""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit, QScrollArea, QStyleFactory
from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector
from support.panel_helpers import shown_panel
from support.remote_gui import memory_keyring, mixed_opener  # noqa: F401 - a fixture
from support.remote_servers import stand_in  # noqa: F401 - a fixture
from support.settings_file import settings_at
from support.widget_walk import accessible_name, unnamed_widgets
from support.window_stack import SETTINGS_FILE, ModelStack

from app.engine.types import ModelSettings, RemoteModel, ServerConfig
from app.images.image import ImageError
from app.library.projectors import projector_for
from app.ui.parameters.projector_row import FILE_FILTER, NO_PROJECTOR_TEXT, NO_PROJECTOR_TIP
from app.ui.widgets.colors import MIN_CONTRAST, Tone, tone_color, tone_of, worst_contrast
from app.ui.window.appearance import dark_palette

WAIT_MS = 10_000
PANEL_WIDTH = 360


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


@pytest.fixture
def panel(qtbot, scripted_models):
    return shown_panel(qtbot, scripted_models, PANEL_WIDTH)


def load(qtbot, models, path) -> None:
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        models.load(path)


def stored(tmp_path, key: str) -> ModelSettings:
    """The model's settings as the settings file holds them (scripted_models keeps it in tmp_path)."""
    return settings_at(tmp_path / SETTINGS_FILE).model_settings(key)


def choose_file(qtbot, panel, path) -> None:
    """Choose… by keyboard, then the file's path typed into the chooser and Enter."""
    row = panel.projector
    row.choose_button.setFocus()
    QTest.keyClick(row.choose_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: row.dialog is not None and row.dialog.isVisible(), timeout=WAIT_MS)
    dialog = row.dialog
    assert dialog.directory().absolutePath() == str(panel._models.current.path.parent), "opens on the model's folder"
    assert dialog.nameFilters() == [FILE_FILTER] and "*.gguf" in FILE_FILTER
    name_box = dialog.findChild(QLineEdit, "fileNameEdit")
    name_box.setFocus()
    name_box.setText(str(path))
    QTest.keyClick(name_box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: row.dialog is None, timeout=WAIT_MS)


def fitting_projector(tmp_path):
    """A projector that fits the tiny model, in a folder of its own."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return write_tiny_projector(folder / "mmproj-elsewhere.gguf")


def test_the_row_names_the_projector_beside_the_model(panel, qtbot, pair):
    load(qtbot, panel._models, pair.model)
    row = panel.projector
    assert not row.label.isHidden() and not row.name.isHidden()
    assert row.name.text() == "mmproj-tiny-vision.gguf (beside the model)"
    assert str(pair.projector) in row.name.toolTip() and row.name.accessibleDescription() == str(pair.projector)
    assert row.choose_button.isEnabled() and row.automatic_button.isHidden() and row.problem.isHidden()
    assert row.choose_button.accessibleDescription() == "Projector in use: mmproj-tiny-vision.gguf (beside the model)."


@pytest.mark.parametrize("kind", ["another model's", "a language model", "damaged"])
def test_a_file_that_is_not_this_models_projector_is_explained_and_not_kept(panel, qtbot, pair, tmp_path, kind):
    models = panel._models
    load(qtbot, models, pair.model)
    if kind == "another model's":
        chosen = write_tiny_projector(tmp_path / "mmproj-wide.gguf", projection_dim=96)
    elif kind == "a language model":
        chosen = pair.model
    else:
        chosen = tmp_path / "mmproj-cut.gguf"
        chosen.write_bytes(pair.projector.read_bytes()[:2000])
    with pytest.raises(ImageError) as refused:
        projector_for(pair.model, str(chosen))
    changes = []
    models.settingsChanged.connect(changes.append)

    choose_file(qtbot, panel, chosen)
    row = panel.projector
    assert not row.problem.isHidden()
    assert row.problem.text() == f"⚠ {refused.value} Not applied."
    if kind == "another model's":  # both widths named
        assert "mmproj-wide.gguf is not the projector of tiny-vision.gguf" in row.problem.text()
        assert "96" in row.problem.text() and "64" in row.problem.text()
    assert row.problem.textFormat() == Qt.TextFormat.PlainText and tone_of(row.problem) is Tone.ERROR
    assert str(refused.value) in row.choose_button.accessibleDescription()
    assert changes == [] and models.settings.mmproj is None, "the refused file is not kept"
    assert stored(tmp_path, pair.model.name).mmproj is None
    assert row.name.text() == "mmproj-tiny-vision.gguf (beside the model)"
    assert panel.reload_notice.isHidden()


def test_a_fitting_projector_is_kept_for_the_model_and_applies_on_reload(panel, qtbot, pair, tmp_path, script):
    models = panel._models
    load(qtbot, models, pair.model)
    other = fitting_projector(tmp_path)

    choose_file(qtbot, panel, other)
    row = panel.projector
    assert row.problem.isHidden()
    assert row.name.text() == "mmproj-elsewhere.gguf (chosen)" and str(other) in row.name.toolTip()
    assert models.settings.mmproj == str(other)
    assert stored(tmp_path, pair.model.name).mmproj == str(other)
    assert not panel.reload_notice.isHidden(), "a load option: it applies on reload"
    assert not row.automatic_button.isHidden()

    QTest.keyClick(panel.temperature, Qt.Key.Key_Up)  # another edit keeps the choice
    assert models.settings.mmproj == str(other)

    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        panel.reload_button.click()
    assert script.loads[-1][1].mmproj == str(other), "the engine is given the chosen projector"
    assert panel.reload_notice.isHidden()
    assert row.name.text() == "mmproj-elsewhere.gguf (chosen)"


def test_use_the_one_beside_the_model_forgets_a_stored_choice(qtbot, pair, tmp_path, script):
    other = fitting_projector(tmp_path)
    stack = ModelStack.start(tmp_path, opener=script.open,
                             model_settings={pair.model.name: ModelSettings(mmproj=str(other))})
    try:
        panel = shown_panel(qtbot, stack.models, PANEL_WIDTH)
        load(qtbot, stack.models, pair.model)
        row = panel.projector
        assert row.name.text() == "mmproj-elsewhere.gguf (chosen)"
        assert accessible_name(row.automatic_button) == "Use the one beside the model"

        row.automatic_button.setFocus()
        QTest.keyClick(row.automatic_button, Qt.Key.Key_Space)
        assert stack.models.settings.mmproj is None
        assert stored(tmp_path, pair.model.name).mmproj is None
        assert row.name.text() == "mmproj-tiny-vision.gguf (beside the model)"
        assert row.automatic_button.isHidden()
        assert not panel.reload_notice.isHidden(), "it loaded with the chosen one"
    finally:
        stack.shutdown()


def test_a_choice_that_cannot_be_used_is_said_before_a_reload(panel, qtbot, pair, tmp_path):
    """A choice set elsewhere (the session's settings) whose file is gone: the load would fail,
    so the row says why now, and offers the way back."""
    models = panel._models
    load(qtbot, models, pair.model)
    gone = tmp_path / "mmproj-deleted.gguf"
    models.update_settings(models.settings.with_changes(mmproj=str(gone)))
    row = panel.projector
    assert row.name.text() == "mmproj-deleted.gguf (chosen)"
    assert row.problem.text() == f"⚠ The projector {gone} was not found."
    assert not row.automatic_button.isHidden()
    QTest.mouseClick(row.automatic_button, Qt.MouseButton.LeftButton)
    assert models.settings.mmproj is None and row.problem.isHidden()
    assert row.name.text() == "mmproj-tiny-vision.gguf (beside the model)"


def test_the_default_gemma_reads_no_images(panel, qtbot, gemma_path):
    load(qtbot, panel._models, gemma_path)
    row = panel.projector
    assert row.name.text() == NO_PROJECTOR_TEXT == "None: this model reads no images"
    assert "Choose its projector" in row.name.toolTip() and row.name.accessibleDescription() == NO_PROJECTOR_TIP
    assert row.choose_button.isEnabled() and row.automatic_button.isHidden() and row.problem.isHidden()


def test_a_servers_model_has_no_projector_row(qtbot, pair, tmp_path, script, stand_in, memory_keyring):  # noqa: F811
    stack = ModelStack.start(tmp_path, opener=mixed_opener(script))
    try:
        panel = shown_panel(qtbot, stack.models, PANEL_WIDTH)
        load(qtbot, stack.models, RemoteModel(ServerConfig(stand_in.url("ok"), "Stand-in"), "stand-in"))
        row = panel.projector
        assert row.label.isHidden() and row.name.isHidden() and row.controls.isHidden()
        load(qtbot, stack.models, pair.model)
        assert not (row.label.isHidden() or row.name.isHidden() or row.controls.isHidden())
        assert row.name.text() == "mmproj-tiny-vision.gguf (beside the model)"
    finally:
        stack.shutdown()


def test_a_long_name_never_widens_the_panel(qtbot, scripted_models, pair, tmp_path):
    """Names without a place to wrap (underscores) are clipped; their tooltips have them whole."""
    model = tmp_path / "models" / "tiny_vision_with_a_very_long_name_that_has_no_spaces_or_hyphens_at_all.gguf"
    model.parent.mkdir()
    shutil.copy(pair.model, model)
    beside = write_tiny_projector(model.with_name(f"mmproj_{model.name}"))
    wide = write_tiny_projector(tmp_path / f"mmproj_{model.stem}_made_for_another_model.gguf", projection_dim=96)
    panel = shown_panel(qtbot, scripted_models, 300)
    load(qtbot, scripted_models, model)
    choose_file(qtbot, panel, wide)
    row = panel.projector
    assert row.name.text().startswith("mmproj_tiny_vision_with") and str(beside) in row.name.toolTip()
    assert not row.problem.isHidden() and "is not the projector of tiny_vision_with" in row.problem.text()
    qtbot.wait(20)  # the layouts run (they are posted)
    assert panel.findChild(QScrollArea).widget().width() <= panel.width()


def test_the_row_is_named_reached_by_tab_and_readable_in_light_and_dark(panel, qtbot, pair, tmp_path, qapp):
    load(qtbot, panel._models, pair.model)
    choose_file(qtbot, panel, fitting_projector(tmp_path))  # the second button shown too
    row = panel.projector
    assert unnamed_widgets(panel) == []
    assert accessible_name(row.choose_button) == "Choose projector"
    assert row.label.buddy() is row.choose_button
    for widget in (row.label, row.choose_button, row.automatic_button):
        assert len(widget.toolTip()) > 40

    panel.activateWindow()
    qtbot.waitUntil(panel.isActiveWindow, timeout=WAIT_MS)
    panel.load_settings.use_mlock.setFocus()
    reached = []
    for _ in range(3):
        QTest.keyClick(panel.focusWidget(), Qt.Key.Key_Tab)
        reached.append(panel.focusWidget())
    assert reached == [row.choose_button, row.automatic_button, panel.template_button]

    choose_file(qtbot, panel, write_tiny_projector(tmp_path / "mmproj-wide.gguf", projection_dim=96))
    previous = qapp.palette()
    try:
        for palette in (QStyleFactory.create("Fusion").standardPalette(), dark_palette()):
            qapp.setPalette(palette)
            red = tone_color(Tone.ERROR, palette)
            qtbot.waitUntil(lambda: row.problem.palette().color(QPalette.ColorRole.WindowText) == red,
                            timeout=WAIT_MS)
            assert row.name.palette().color(QPalette.ColorRole.WindowText) == palette.color(QPalette.ColorRole.WindowText)
            for label in (row.name, row.problem, row.label):
                assert worst_contrast(label.palette().color(label.foregroundRole()), palette) >= MIN_CONTRAST
    finally:
        qapp.setPalette(previous)
