"""The parameters panel's Sampling box: the preset picker and the eight sampling fields, each
with the muted word saying where its value comes from, and for a server's model the note on
which fields that server may ignore or is not sent. The panel fills the preset box and wires
the fields; this lays them out."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QGroupBox, QHBoxLayout, QLabel, QWidget

from ...engine.remote.request import REMOTE_EXTENSION_FIELDS
from ..widgets.form_grid import FormGrid
from .controls import add_row, note, sampling_spin
from .sampling_sources import SourceMarks

# The sampling controls' labels, by SamplingParams field: the remote note names fields by them.
FIELD_LABELS = {
    "temperature": "Temperature", "top_k": "Top-k", "top_p": "Top-p", "min_p": "Min-p",
    "repeat_penalty": "Repeat penalty", "repeat_last_n": "Penalty window", "presence_penalty": "Presence penalty",
    "frequency_penalty": "Frequency penalty", "max_tokens": "Max length", "stop": "Stop at", "seed": "Seed",
}
FIELD_TIPS = {
    "temperature": "How adventurous word choice is. 0 always picks the likeliest word (same answer "
                   "every time); 0.7 is a good default; above 1 gets creative, then incoherent.",
    "top_k": "Consider only the k likeliest next words. Typical: 40. Off (0) considers all of them.",
    "top_p": "Consider only the likeliest words that together make up this share of the "
             "probability. Typical: 0.9–0.95. 1 turns it off.",
    "min_p": "Drop words less than this fraction as likely as the likeliest one. Typical: "
             "0.05; it trims nonsense while keeping variety. Off (0) drops none.",
    "repeat_penalty": "Makes words that were used recently less likely, against loops. 1 is off; "
                      "1.1 is typical; much higher makes the wording odd.",
    "repeat_last_n": "How many recent tokens the repeat, presence and frequency penalties look at. "
                     "Typical: 64. Off (0) looks at none.",
    "presence_penalty": "Lowers the chance of any word that already appeared, nudging towards new topics. "
                        "0 is off; 0.1–1 is a gentle to strong push. Negative values encourage repeats.",
    "frequency_penalty": "Like the presence penalty, but stronger the more often a word was used. 0 is off; "
                         "0.1–1 is typical.",
}


def remote_fields_note(unsent: tuple[str, ...]) -> str:
    """What the sampling box says for a remote model: which fields are llama.cpp's extensions
    (obeyed by llama.cpp's servers, partly by vLLM, perhaps ignored by others), and which
    this server is not sent at all."""
    def names(fields: list[str]) -> str:
        labels = [FIELD_LABELS.get(field, field) for field in fields]
        return " and ".join(filter(None, [", ".join(labels[:-1]), labels[-1]]))

    extensions = [field for field in REMOTE_EXTENSION_FIELDS if field not in unsent]
    parts = []
    if len(extensions) == 1:
        parts.append(f"{names(extensions)} is a llama.cpp/vLLM extension: other servers may ignore it.")
    elif extensions:
        parts.append(f"{names(extensions)} are llama.cpp/vLLM extensions: other servers may ignore them.")
    if unsent:
        parts.append(f"Not sent to this server: {names(list(unsent))}.")
    return " ".join(parts)


class SamplingBox(QGroupBox):
    """The Sampling box. `fields`: the sampling controls by SamplingParams field; `labels`:
    its label column, which the panel lines up with the other boxes'."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Sampling", parent)
        self.labels: list[QWidget] = []
        self.preset = QComboBox()
        self.fields = {name: sampling_spin(name) for name in FIELD_TIPS}
        self.fields["repeat_last_n"].setSuffix(" tokens")

        form = FormGrid(self)
        # The preset across the box, not in the field column: "Model's defaults" is wider than it.
        preset_tip = "Ready-made sampling settings. Changing a value below switches this to Custom."
        preset_label = QLabel("Preset")
        preset_label.setToolTip(preset_tip)
        preset_label.setBuddy(self.preset)
        self.preset.setToolTip(preset_tip)
        self.preset.setAccessibleName("Preset")
        preset_row = QHBoxLayout()
        preset_row.addWidget(preset_label)
        preset_row.addWidget(self.preset, 1)
        form.addLayout(preset_row, 0, 0, 1, 2)
        for name, spin in self.fields.items():
            add_row(form, self.labels, FIELD_LABELS[name], spin, FIELD_TIPS[name])

        # Where each value comes from (the model, a preset, Hearth, the user), under its label.
        self.sources = SourceMarks(self.fields, form)
        self.remote_note = note()  # for a remote model: which fields a server may ignore
        form.add_wide(self.remote_note)
