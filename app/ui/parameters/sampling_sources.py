"""Where each sampling value in the parameters panel comes from: the model's author, a preset,
Hearth's default, or the user; and the preset box's choices, "Model's defaults" first where the
loaded model has any (its GGUF's `general.sampling.*` keys, engine/gguf/sampling_defaults.py).

A value's source is worked out from the values alone, so it reads the same after a restart:
the values are compared with each choice the preset box offers, the one that agrees on the most
fields is taken as where they started (the model's defaults on a tie, then Balanced), and each
field that agrees with it comes from there; the others are the user's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from ...engine.sampling import PRESETS, ModelDefaults, SamplingParams, model_params
from ..widgets.colors import Tone, set_tone

MODEL_DEFAULTS = "Model's defaults"
CUSTOM = "Custom"
HEARTHS_PRESET = "Balanced"  # Hearth's defaults, and what a model's own values are laid over
# What a preset decides. Reply length, stop strings, the seed and logit biases are the
# user's own and survive a change of preset.
PRESET_FIELDS = ("temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n",
                 "presence_penalty", "frequency_penalty")
DECIMALS = 2  # the panel's fractional fields show (and so keep) two decimals
SMALLER = 0.9  # the source words' size, against the panel's text


class Origin(Enum):
    MODEL = "model"  # the model's author, from its file
    PRESET = "preset"  # a preset the user chose
    DEFAULT = "default"  # Hearth's, where the model's defaults leave a field out
    USER = "yours"  # typed or stepped by the user


@dataclass(frozen=True)
class Source:
    """Where one value comes from; `preset` names the preset for Origin.PRESET."""

    origin: Origin
    preset: str | None = None

    @property
    def label(self) -> str:
        """The word shown beside the field."""
        return self.origin.value

    @property
    def description(self) -> str:
        """The sentence a tooltip and a screen reader give."""
        if self.origin is Origin.MODEL:
            return "Value from the model's defaults, as its author recommends."
        if self.origin is Origin.PRESET:
            return f"Value from the {self.preset} preset."
        if self.origin is Origin.DEFAULT:
            return "Hearth's default value: the model's defaults do not include this one."
        return "Your own value."


def choices(defaults: ModelDefaults) -> dict[str, SamplingParams]:
    """The preset box's entries and their values: the model's defaults first, where the model
    gives any, then Hearth's presets."""
    return {**({MODEL_DEFAULTS: model_params(defaults)} if defaults else {}), **PRESETS}


def _same(a: float | int, b: float | int) -> bool:
    """Equal as the panel shows them (a model's 0.925 shows, and is kept, as 0.93)."""
    return round(a, DECIMALS) == round(b, DECIMALS)


def _agreeing(params: SamplingParams, preset: SamplingParams) -> list[str]:
    return [f for f in PRESET_FIELDS if _same(getattr(params, f), getattr(preset, f))]


def matching_choice(params: SamplingParams, defaults: ModelDefaults) -> str:
    """The preset box's entry these values are, or Custom."""
    return next((name for name, preset in choices(defaults).items()
                 if len(_agreeing(params, preset)) == len(PRESET_FIELDS)), CUSTOM)


def sources(params: SamplingParams, defaults: ModelDefaults) -> dict[str, Source]:
    """Where each of PRESET_FIELDS' values comes from."""
    options = choices(defaults)
    start = max(options, key=lambda name: (len(_agreeing(params, options[name])), name == MODEL_DEFAULTS,
                                           name == HEARTHS_PRESET))
    agreeing = _agreeing(params, options[start])
    given = defaults.values()

    def source(field: str) -> Source:
        if field not in agreeing:
            return Source(Origin.USER)
        if start != MODEL_DEFAULTS:
            return Source(Origin.PRESET, start)
        return Source(Origin.MODEL if field in given else Origin.DEFAULT)

    return {field: source(field) for field in PRESET_FIELDS}


def defaults_tip(defaults: ModelDefaults, labels: dict[str, str]) -> str:
    """What "Model's defaults" holds, for its tooltip: the model's values by their labels."""
    values = ", ".join(f"{labels[field]} {value:g}" for field, value in defaults.values().items())
    return f"What the model's author recommends: {values}. Hearth's defaults for the rest."


class SourceMarks:
    """The muted word beside each sampling field saying where its value comes from, also in
    the field's tooltip and accessible description (a screen reader says it with the field).

    Each word goes under its field's label, in the label column: a column of its own would
    take its width from the fields, which a narrow side panel has none to spare for."""

    def __init__(self, fields: dict[str, QWidget], grid: QGridLayout):
        """`fields` by SamplingParams field, each already on `grid` with its label in column 0."""
        self._fields = fields
        self._tips = {field: widget.toolTip() for field, widget in fields.items()}
        self.labels: dict[str, QLabel] = {}
        for field, widget in fields.items():
            label = QLabel()
            font = QFont(label.font())
            font.setPointSizeF(font.pointSizeF() * SMALLER)
            label.setFont(font)
            set_tone(label, Tone.MUTED)
            self.labels[field] = label
            # In the label's cell, the name at its top and the word at its bottom, in a row
            # tall enough for both.
            row, _column, _rows, _columns = grid.getItemPosition(grid.indexOf(widget))
            name = grid.itemAtPosition(row, 0).widget()
            grid.setAlignment(name, Qt.AlignLeft | Qt.AlignTop)
            grid.addWidget(label, row, 0, Qt.AlignLeft | Qt.AlignBottom)
            grid.setRowMinimumHeight(row, name.sizeHint().height() + label.fontMetrics().height())

    def show(self, found: dict[str, Source]) -> None:
        """Say where each field's value comes from."""
        for field, source in found.items():
            widget, label = self._fields[field], self.labels[field]
            label.setText(source.label)
            label.setToolTip(source.description)
            widget.setAccessibleDescription(source.description)
            widget.setToolTip(f"{self._tips[field]}\n\n{source.description}")
