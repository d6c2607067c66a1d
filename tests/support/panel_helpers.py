"""The Parameters panel as its tests open it: over the conftest's scripted_models, shown at a
width, and a model loaded by name (the scripted backend describes every file as its script's)."""

from __future__ import annotations

from pathlib import Path

from app.ui.parameters.panel import ParametersPanel


def shown_panel(qtbot, models, width: int) -> ParametersPanel:
    widget = ParametersPanel(models)
    qtbot.addWidget(widget)
    widget.resize(width, 900)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def load(qtbot, models, name: str) -> None:
    with qtbot.waitSignal(models.modelLoaded, timeout=5_000):
        models.load(Path("/models") / name)
