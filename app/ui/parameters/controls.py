"""The parameters panel's controls, made from the ranges the engine accepts: spin boxes for a
sampling value or a count, the context length's (which refuses what `hearth chat --ctx`
refuses), a muted note, and a labelled row whose label joins the panel's one label column."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QAbstractSpinBox, QDoubleSpinBox, QLabel, QSizePolicy, QSpinBox, QWidget

from ...engine.options import MIN_CONTEXT, context_ceiling
from ...engine.sampling import BOUNDS
from ..widgets.colors import Tone, set_tone
from ..widgets.form_grid import FormGrid
from .sampling_sources import DECIMALS

AUTOMATIC = 0  # the context length's "Automatic": the model's own, capped (options.context_for)
CONTEXT_STEP = 1024


def note(text: str = "") -> QLabel:
    """A muted, wrapping note under a field, hidden until it applies."""
    label = QLabel(text)
    label.setWordWrap(True)
    set_tone(label, Tone.MUTED)
    label.hide()
    return label


def add_row(form: FormGrid, labels: list[QWidget], label: str, field: QWidget, tip: str,
            alignment: Qt.AlignmentFlag = Qt.AlignmentFlag(0)) -> None:
    """A labelled row whose label and field both explain themselves on hover; the label joins
    `labels`, the column the panel gives one width."""
    label_widget = QLabel(label)
    label_widget.setToolTip(tip)
    field.setToolTip(tip)
    if not field.accessibleName():
        field.setAccessibleName(label)
    form.add_row(label_widget, field, alignment)
    labels.append(label_widget)


def sampling_spin(name: str) -> QSpinBox | QDoubleSpinBox:
    """A control for one sampling parameter, with exactly the range SamplingParams accepts.

    A bound the parameter may not reach (top-p of 0 keeps no words at all) is replaced by the
    nearest value the control can show."""
    bounds = BOUNDS[name]
    if bounds.whole:
        low = int(bounds.low) + 1 if bounds.low_open else int(bounds.low)
        spin = whole_spin(low, int(bounds.high), int(bounds.step))
    else:
        spin = QDoubleSpinBox()
        spin.setDecimals(DECIMALS)
        spin.setRange(bounds.low + 0.01 if bounds.low_open else bounds.low, bounds.high)
        spin.setSingleStep(bounds.step)
        spin.setKeyboardTracking(False)
    if bounds.off_at_zero:
        spin.setSpecialValueText("Off")
    may_shrink(spin)
    return spin


def whole_spin(low: int, high: int, step: int) -> QSpinBox:
    spin = QSpinBox()
    configure_whole(spin, low, high, step)
    return spin


def configure_whole(spin: QSpinBox, low: int, high: int, step: int) -> None:
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setKeyboardTracking(False)  # one change when the typed number is complete, not per digit
    spin.setGroupSeparatorShown(True)
    may_shrink(spin)


def may_shrink(spin: QAbstractSpinBox) -> None:
    """A spin box is never narrower than its widest value ("1,048,576 tokens") by default;
    in a narrow side panel it may be, down to what shows a short value."""
    spin.setSizePolicy(QSizePolicy.Preferred, spin.sizePolicy().verticalPolicy())


class ContextSpin(QSpinBox):
    """The context length: Automatic (0), or MIN_CONTEXT tokens up to the model's own. A typed
    number under MIN_CONTEXT is refused, as `hearth chat --ctx` refuses it (the field goes
    back to its value), and a step never lands there."""

    def __init__(self):
        super().__init__()
        configure_whole(self, AUTOMATIC, context_ceiling(0), CONTEXT_STEP)
        self.setSpecialValueText("Automatic")
        self.setSuffix(" tokens")

    def validate(self, text: str, position: int):
        state, text, position = super().validate(text, position)
        if state == QValidator.State.Acceptable and AUTOMATIC < self.valueFromText(text) < MIN_CONTEXT:
            state = QValidator.State.Intermediate  # on the way to a longer number, perhaps
        return state, text, position

    def stepBy(self, steps: int) -> None:
        if AUTOMATIC < self.value() + steps * self.singleStep() < MIN_CONTEXT:
            self.setValue(AUTOMATIC if steps < 0 else MIN_CONTEXT)
        else:
            super().stepBy(steps)
