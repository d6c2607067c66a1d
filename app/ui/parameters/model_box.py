"""The parameters panel's Model box: the loaded model's name, its system prompt, its load
settings (context length with the live memory plan under it, GPU layers, CPU threads,
load_settings.py's flash attention, KV cache, mmap and mlock, and projector_row.py's projector),
its chat template, and the notice that offers a reload. The ranges are engine/options.py's; the
panel sets each model's own and wires the fields; this lays them out."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGroupBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, QWidget

from ...engine.options import DEFAULT_CONTEXT, LOAD_OPTION, gpu_layer_ceiling
from ..widgets.colors import Tone, set_tone
from ..widgets.form_grid import FormGrid
from .controls import ContextSpin, add_row, note, whole_spin
from .load_settings import FLASH_TIP, KV_TIP, LoadSettings
from .projector_row import ProjectorRow

ALL_LAYERS = LOAD_OPTION["n_gpu_layers"].unset  # the GPU layers field's "Auto", as the file spells it
AUTOMATIC_THREADS = LOAD_OPTION["n_threads"].unset  # the CPU threads field's "Automatic"
MAX_CPU_THREADS = os.cpu_count() or 64  # more threads than CPUs only slows llama.cpp down
NO_GPU_REASON = "This build of llama.cpp has no GPU offload, so the model runs on the CPU."
RELOAD_NOTICE = "Takes effect when the model is reloaded."
SERVER_CHOOSES = "Chosen by the server: context length, GPU layers and CPU threads."


class ModelBox(QGroupBox):
    """The Model box; `labels`: its label column, which the panel lines up with the others'."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Model", parent)
        self.labels: list[QWidget] = []
        self.system_prompt_edit = QPlainTextEdit()
        self.system_prompt_edit.setPlaceholderText("e.g. You are a concise, friendly assistant.")
        self.system_prompt_edit.setFixedHeight(90)
        self.system_prompt_edit.setTabChangesFocus(True)
        self.system_prompt_edit.setAccessibleName("System prompt")
        self.system_prompt_edit.setToolTip(
            "Instructions the model reads before every conversation: who it is, tone, rules. "
            "Applies from the next reply.")
        self.n_ctx = ContextSpin()
        self.gpu_layers = whole_spin(ALL_LAYERS, gpu_layer_ceiling(0), 1)
        self.gpu_layers.setSpecialValueText("Auto")
        self.gpu_layers.setValue(ALL_LAYERS)
        self.cpu_threads = whole_spin(AUTOMATIC_THREADS, MAX_CPU_THREADS, 1)
        self.cpu_threads.setSpecialValueText("Automatic")
        self.gpu_reason = note(NO_GPU_REASON)
        self.server_note = note(SERVER_CHOOSES)
        self.template_label = QLabel()
        self.template_label.setWordWrap(True)
        self.template_button = QPushButton("Edit…")
        self.template_button.setToolTip("See and change the chat template, with a preview of the exact prompt")
        self.template_button.setAccessibleName("Edit chat template")

        self.reload_notice = QFrame()
        self.reload_notice.setFrameShape(QFrame.StyledPanel)
        self.reload_label = QLabel(RELOAD_NOTICE)
        self.reload_label.setWordWrap(True)
        self.reload_button = QPushButton("Reload now")
        notice_layout = QHBoxLayout(self.reload_notice)
        notice_layout.setContentsMargins(6, 4, 6, 4)
        notice_layout.addWidget(self.reload_label, 1)
        notice_layout.addWidget(self.reload_button)
        self.reload_notice.hide()

        self.model_name = QLabel()
        self.model_name.setTextFormat(Qt.TextFormat.PlainText)  # a file's or a server's name: foreign text
        set_tone(self.model_name, Tone.MUTED)
        # A long file name is clipped rather than widening the whole panel.
        self.model_name.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)

        self.load_settings = LoadSettings(self)
        self.projector = ProjectorRow(self)
        self._lay_out()

    def _lay_out(self) -> None:
        form, labels, load = FormGrid(self), self.labels, self.load_settings
        form.add_wide(self.model_name)
        system_label = QLabel("S&ystem prompt")
        system_label.setToolTip(self.system_prompt_edit.toolTip())
        system_label.setBuddy(self.system_prompt_edit)
        form.add_wide(system_label)
        form.add_wide(self.system_prompt_edit)
        add_row(form, labels, "Context length", self.n_ctx,
                "How much of the conversation the model can see at once, in tokens. Longer "
                f"needs more memory. Automatic: the model's own length, up to {DEFAULT_CONTEXT:,}.")
        form.add_field(load.plan_row)  # what a load with these values takes
        add_row(form, labels, "GPU layers", self.gpu_layers,
                "How many of the model's layers run on the graphics card; the rest run on the "
                "CPU. Auto puts as many as the card's free memory holds (keeping 1 GiB spare); "
                "0 uses the CPU only.")
        form.add_field(self.gpu_reason)
        add_row(form, labels, "CPU threads", self.cpu_threads,
                "How many threads generate on the CPU (for the layers not on the graphics card). "
                "Automatic: one per physical core, as llama.cpp's own tools do; the status bar "
                "shows the number in use. On a CPU with efficiency cores, the performance-core "
                "count can be faster.")
        add_row(form, labels, "Flash attention", load.flash_attn, FLASH_TIP)
        add_row(form, labels, "KV cache", load.kv_type, KV_TIP)
        form.add_wide(load.use_mmap)
        form.add_wide(load.use_mlock)
        form.add_wide(load.problem)
        form.add_row(self.projector.label, self.projector.name)
        form.setAlignment(self.projector.label, Qt.AlignLeft | Qt.AlignTop)  # beside the name's first line
        self.projector.label.setBuddy(self.projector.choose_button)  # the name is no field: its button is
        labels.append(self.projector.label)
        form.add_field(self.projector.controls)
        form.add_field(self.server_note)
        add_row(form, labels, "Chat template", self.template_button,
                "The format that turns the conversation into the text the model reads.", Qt.AlignLeft)
        form.add_field(self.template_label)  # under the button: a long name wraps in the field's width
        form.add_wide(self.reload_notice)
