"""The right panel's Parameters page: how replies are sampled, and the loaded model's settings.

A view of the `ModelSession`: it shows the current model's `ModelSettings` and hands every
change the user makes to the session, which keeps it (per model) and applies it; the session's
settingsChanged signal brings the values back here. The panel stores nothing itself.

Every control's range comes from `sampling.BOUNDS`, the ranges `SamplingParams` accepts, so
the panel cannot produce parameters the engine would reject.

A model whose file gives its author's sampling values (`general.sampling.*`) has them as the
"Model's defaults" preset, and starts with them; under each sampling label a muted word says
where the value comes from: the model, a preset, Hearth's default, or the user
(sampling_sources.py, which also puts it in the field's accessible description).

For a model on a remote server the system prompt and sampling apply as for a file, but the
server chooses the context length, GPU layers and threads and applies its own chat template:
those controls are off, and say so. Which sampling fields a server obeys cannot be asked, so a
note names llama.cpp's extensions (other servers may ignore them) and the fields this server
is not sent (remote_request.py), whose controls are off, as is "Draft from the conversation"
(prompt-lookup decoding, engine/lookup.py: a local model's way of decoding).

The Model box's load options (flash attention, KV cache type, mmap, mlock) and the live memory
plan under the context length are load_settings.py's; the panel places and wires them, and
re-plans (`ModelSession.memory_plan`) whenever a load setting changes.
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ...engine.gguf.modelfile import ModelInfo
from ...engine.remote.request import REMOTE_EXTENSION_FIELDS
from ...engine.sampling import BOUNDS, Drafting, ModelDefaults, SamplingParams
from ...engine.templates.chat_template import fallback_name
from ...engine.types import ModelDescription, ModelSettings, OffloadSupport
from ...owners.model_session import ModelSession
from ..widgets.colors import Tone, set_tone
from ..widgets.form_grid import FormGrid
from ..widgets.tooltips import plain_tooltip
from .load_settings import FLASH_TIP, KV_TIP, LoadSettings, values_for
from .sampling_sources import (
    CUSTOM,
    DECIMALS,
    MODEL_DEFAULTS,
    PRESET_FIELDS,
    SourceMarks,
    choices,
    defaults_tip,
    matching_choice,
    sources,
)
from .stop_strings import format_stop_strings, parse_stop_strings
from .template_editor import TemplateEditor

PRESET_TIPS = {
    "Precise": "Always the likeliest word: the same answer every time. For facts, code and extraction.",
    "Balanced": "A little variety while staying on topic. A good default for conversation.",
    "Creative": "More varied, surprising wording. For brainstorming and fiction.",
    CUSTOM: "Your own settings (any change to the values below).",
}
MAX_CONTEXT = 1 << 20  # when the file does not say how long its context is
MAX_GPU_LAYERS = 999  # when the file does not say how many layers it has
MAX_CPU_THREADS = os.cpu_count() or 64  # more threads than CPUs only slows llama.cpp down
NO_GPU_REASON = "This build of llama.cpp has no GPU offload, so the model runs on the CPU."
RELOAD_NOTICE = "Takes effect when the model is reloaded."
SERVER_CHOOSES = "Chosen by the server: context length, GPU layers and CPU threads."
SERVER_TEMPLATE_TEXT = "The server applies its own chat template"
DRAFT_TIP = ("Prompt lookup: guess the next words by copying what followed the same words earlier in the "
             "conversation, and check several guesses in one step. A guess is kept only where the model "
             "picks that same word, so the reply is the model's own; it comes faster where it repeats its "
             "input (code edits, quotes). For models on this computer; a server decides for its own.")
# The sampling controls' labels, by SamplingParams field: the remote note names fields by them.
FIELD_LABELS = {
    "temperature": "Temperature", "top_k": "Top-k", "top_p": "Top-p", "min_p": "Min-p",
    "repeat_penalty": "Repeat penalty", "repeat_last_n": "Penalty window", "presence_penalty": "Presence penalty",
    "frequency_penalty": "Frequency penalty", "max_tokens": "Max length", "stop": "Stop at", "seed": "Seed",
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


class ParametersPanel(QWidget):
    """Sampling parameters, a preset picker, and the loaded model's own settings."""

    def __init__(self, models: ModelSession, parent=None):
        super().__init__(parent)
        self._models = models
        self._updating = False  # set while controls are filled in by code, not by the user
        self._handing_over = False  # set while the user's edit goes to the session
        self._info: ModelInfo | None = None
        self._description: ModelDescription | None = None
        self._template_override: str | None = None
        self._logit_bias: dict[int, float] = {}
        self._presets_for: ModelDefaults | None = None  # the model defaults the preset box offers

        self._labels: list[QWidget] = []  # the label column's widgets, given one width
        self._gpu_available = True
        self._build_sampling()
        self._build_reply()
        self._build_model()
        # One label column for all three boxes, so the fields line up down the panel.
        label_width = max(label.sizeHint().width() for label in self._labels)
        for label in self._labels:
            label.setMinimumWidth(label_width)

        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(6, 6, 6, 6)  # a narrow side panel needs every pixel for the fields
        column.addWidget(self.sampling_box)
        column.addWidget(self.reply_box)
        column.addWidget(self.model_box)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(content)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setAccessibleName("Parameters")
        scroll.setAccessibleDescription("How replies are sampled, their length and stop strings, and the loaded "
                                        "model's settings")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

        self.show_settings(models.settings)
        self._show_model(models.current)
        models.modelLoaded.connect(self._show_model)
        models.descriptionChanged.connect(self._show_model)  # a server refused some fields
        models.modelUnloaded.connect(lambda: self._show_model(None))
        models.settingsChanged.connect(self.show_settings)
        self.reload_notice.setVisible(models.reload_needed)
        models.reloadNeededChanged.connect(self.reload_notice.setVisible)
        self._show_plan()

    # --- construction ----------------------------------------------------------------------------

    def _build_sampling(self) -> None:
        self.preset = QComboBox()
        self._fill_presets()
        self.temperature = _sampling_spin("temperature")
        self.top_k = _sampling_spin("top_k")
        self.top_p = _sampling_spin("top_p")
        self.min_p = _sampling_spin("min_p")
        self.repeat_penalty = _sampling_spin("repeat_penalty")
        self.repeat_last_n = _sampling_spin("repeat_last_n")
        self.repeat_last_n.setSuffix(" tokens")
        self.presence_penalty = _sampling_spin("presence_penalty")
        self.frequency_penalty = _sampling_spin("frequency_penalty")

        self.sampling_box = QGroupBox("Sampling")
        form = FormGrid(self.sampling_box)
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
        self._row(form, "Temperature", self.temperature,
             "How adventurous word choice is. 0 always picks the likeliest word (same answer "
             "every time); 0.7 is a good default; above 1 gets creative, then incoherent.")
        self._row(form, "Top-k", self.top_k,
             "Consider only the k likeliest next words. Typical: 40. Off (0) considers all of them.")
        self._row(form, "Top-p", self.top_p,
             "Consider only the likeliest words that together make up this share of the "
             "probability. Typical: 0.9–0.95. 1 turns it off.")
        self._row(form, "Min-p", self.min_p,
             "Drop words less than this fraction as likely as the likeliest one. Typical: "
             "0.05; it trims nonsense while keeping variety. Off (0) drops none.")
        self._row(form, "Repeat penalty", self.repeat_penalty,
             "Makes words that were used recently less likely, against loops. 1 is off; "
             "1.1 is typical; much higher makes the wording odd.")
        self._row(form, "Penalty window", self.repeat_last_n,
             "How many recent tokens the repeat, presence and frequency penalties look at. "
             "Typical: 64. Off (0) looks at none.")
        self._row(form, "Presence penalty", self.presence_penalty,
             "Lowers the chance of any word that already appeared, nudging towards new topics. "
             "0 is off; 0.1–1 is a gentle to strong push. Negative values encourage repeats.")
        self._row(form, "Frequency penalty", self.frequency_penalty,
             "Like the presence penalty, but stronger the more often a word was used. 0 is off; "
             "0.1–1 is typical.")

        # Where each value comes from (the model, a preset, Hearth, the user), under its label.
        self.sources = SourceMarks(self._sampling_fields(), form)

        self.remote_note = _note()  # for a remote model: which fields a server may ignore
        form.add_wide(self.remote_note)

        self.preset.activated.connect(self._apply_preset)
        for spin in self._sampling_fields().values():
            spin.valueChanged.connect(self._on_params_edited)

    def _build_reply(self) -> None:
        self.max_tokens = _sampling_spin("max_tokens")
        self.max_tokens.setSuffix(" tokens")
        self.stop = QLineEdit()
        self.stop.setPlaceholderText("none (the model decides)")
        self.fixed_seed = QCheckBox("Fixed seed")
        # A seed is 0…2³²−1, beyond a QSpinBox's 32-bit signed range; a double holds it exactly.
        self.seed = QDoubleSpinBox()
        self.seed.setDecimals(0)
        self.seed.setRange(BOUNDS["seed"].low, BOUNDS["seed"].high)
        self.seed.setKeyboardTracking(False)
        self.seed.setEnabled(False)
        _may_shrink(self.seed)

        self.reply_box = QGroupBox("Reply")
        form = FormGrid(self.reply_box)
        self._row(form, "Max length", self.max_tokens,
             "The longest a reply may get, in tokens (a token is roughly ¾ of a word). "
             "The reply stops here even mid-sentence. Typical: 512–2048.")
        self._row(form, "Stop at", self.stop,
             "Text that ends the reply as soon as the model writes it (it is not shown). "
             "Separate several with commas. Write \\n for a line break, \\, for a comma, "
             "\\s for a space at the start or end, \\\\ for a backslash. "
             "Example: \\n\\nUser:, ###")
        # The tick box stands where a label would: "Fixed seed [1234]" reads as one setting.
        seed_tip = ("The random seed. Fixed: the same settings and conversation give the same reply "
                    "every time, handy for comparing. Unticked: a new seed for every reply.")
        self.fixed_seed.setToolTip(seed_tip)
        self.seed.setToolTip(seed_tip)
        self.seed.setAccessibleName("Seed")
        self.seed.setAccessibleDescription("The seed used while Fixed seed is ticked")
        form.add_row(self.fixed_seed, self.seed)
        self._labels.append(self.fixed_seed)

        self.draft = QCheckBox("Draft from the conversation")
        self.draft.setToolTip(DRAFT_TIP)
        self.draft.setAccessibleName("Draft from the conversation (prompt lookup)")
        self.draft.setAccessibleDescription(DRAFT_TIP)
        form.add_wide(self.draft)

        self.max_tokens.valueChanged.connect(self._on_params_edited)
        self.stop.textEdited.connect(self._on_params_edited)
        self.draft.toggled.connect(self._on_params_edited)
        self.seed.valueChanged.connect(self._on_params_edited)
        self.fixed_seed.toggled.connect(self.seed.setEnabled)
        self.fixed_seed.toggled.connect(self._on_params_edited)

    def _build_model(self) -> None:
        self.system_prompt_edit = QPlainTextEdit()
        self.system_prompt_edit.setPlaceholderText("e.g. You are a concise, friendly assistant.")
        self.system_prompt_edit.setFixedHeight(90)
        self.system_prompt_edit.setTabChangesFocus(True)
        self.system_prompt_edit.setAccessibleName("System prompt")
        self.system_prompt_edit.setToolTip(
            "Instructions the model reads before every conversation: who it is, tone, rules. "
            "Applies from the next reply.")
        self.n_ctx = _int(0, MAX_CONTEXT, 1024)
        self.n_ctx.setSpecialValueText("Automatic")
        self.n_ctx.setSuffix(" tokens")
        self.gpu_layers = _int(-1, MAX_GPU_LAYERS, 1)
        self.gpu_layers.setSpecialValueText("Auto")
        self.gpu_layers.setValue(-1)
        self.cpu_threads = _int(0, MAX_CPU_THREADS, 1)
        self.cpu_threads.setSpecialValueText("Automatic")
        self.gpu_reason = _note(NO_GPU_REASON)
        self.server_note = _note(SERVER_CHOOSES)
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

        self.model_box = QGroupBox("Model")
        form = FormGrid(self.model_box)
        form.add_wide(self.model_name)
        system_label = QLabel("S&ystem prompt")
        system_label.setToolTip(self.system_prompt_edit.toolTip())
        system_label.setBuddy(self.system_prompt_edit)
        form.add_wide(system_label)
        form.add_wide(self.system_prompt_edit)
        self._row(form, "Context length", self.n_ctx,
             "How much of the conversation the model can see at once, in tokens. Longer "
             "needs more memory. Automatic: the model's own length, up to 4,096.")
        form.add_field(self.load_settings.plan_row)  # what a load with these values takes
        self._row(form, "GPU layers", self.gpu_layers,
             "How many of the model's layers run on the graphics card; the rest run on the "
             "CPU. Auto puts as many as the card's free memory holds (keeping 1 GiB spare); "
             "0 uses the CPU only.")
        form.add_field(self.gpu_reason)
        self._row(form, "CPU threads", self.cpu_threads,
             "How many threads generate on the CPU (for the layers not on the graphics card). "
             "Automatic: one per physical core, as llama.cpp's own tools do; the status bar "
             "shows the number in use. On a CPU with efficiency cores, the performance-core "
             "count can be faster.")
        self._row(form, "Flash attention", self.load_settings.flash_attn, FLASH_TIP)
        self._row(form, "KV cache", self.load_settings.kv_type, KV_TIP)
        form.add_wide(self.load_settings.use_mmap)
        form.add_wide(self.load_settings.use_mlock)
        form.add_wide(self.load_settings.problem)
        form.add_field(self.server_note)
        self._row(form, "Chat template", self.template_button,
             "The format that turns the conversation into the text the model reads.", Qt.AlignLeft)
        form.add_field(self.template_label)  # under the button: a long name wraps in the field's width
        form.add_wide(self.reload_notice)

        self.system_prompt_edit.textChanged.connect(self._on_model_edited)
        self.n_ctx.valueChanged.connect(self._on_model_edited)
        self.gpu_layers.valueChanged.connect(self._on_model_edited)
        self.cpu_threads.valueChanged.connect(self._on_model_edited)
        self.load_settings.edited.connect(self._on_model_edited)
        self.load_settings.largestContextChosen.connect(self.n_ctx.setValue)  # as if typed: handed over
        self.template_button.clicked.connect(lambda _checked=False: self.edit_template())
        self.reload_button.clicked.connect(lambda _checked=False: self._models.reload())

    def _sampling_fields(self) -> dict[str, QAbstractSpinBox]:
        """The sampling controls by SamplingParams field."""
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p, "min_p": self.min_p,
                "repeat_penalty": self.repeat_penalty, "repeat_last_n": self.repeat_last_n,
                "presence_penalty": self.presence_penalty, "frequency_penalty": self.frequency_penalty}

    def _row(self, form: FormGrid, label: str, field: QWidget, tip: str,
             alignment: Qt.AlignmentFlag = Qt.AlignmentFlag(0)) -> None:
        """A labelled row whose label and field both explain themselves on hover."""
        label_widget = QLabel(label)
        label_widget.setToolTip(tip)
        field.setToolTip(tip)
        if not field.accessibleName():
            field.setAccessibleName(label)
        form.add_row(label_widget, field, alignment)
        self._labels.append(label_widget)

    # --- sampling --------------------------------------------------------------------------------

    def params(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature.value(),
            top_k=self.top_k.value(),
            top_p=self.top_p.value(),
            min_p=self.min_p.value(),
            repeat_penalty=self.repeat_penalty.value(),
            repeat_last_n=self.repeat_last_n.value(),
            presence_penalty=self.presence_penalty.value(),
            frequency_penalty=self.frequency_penalty.value(),
            max_tokens=self.max_tokens.value(),
            seed=int(self.seed.value()) if self.fixed_seed.isChecked() else None,
            stop=parse_stop_strings(self.stop.text()),
            logit_bias=dict(self._logit_bias),  # no control; kept as given
            draft=Drafting.LOOKUP if self.draft.isChecked() else Drafting.NONE,
        )

    def set_params(self, params: SamplingParams) -> None:
        self._updating = True
        try:
            self.temperature.setValue(params.temperature)
            self.top_k.setValue(params.top_k)
            self.top_p.setValue(params.top_p)
            self.min_p.setValue(params.min_p)
            self.repeat_penalty.setValue(params.repeat_penalty)
            self.repeat_last_n.setValue(params.repeat_last_n)
            self.presence_penalty.setValue(params.presence_penalty)
            self.frequency_penalty.setValue(params.frequency_penalty)
            self.max_tokens.setValue(params.max_tokens)
            self.fixed_seed.setChecked(params.seed is not None)
            if params.seed is not None:
                self.seed.setValue(params.seed)
            self.stop.setText(format_stop_strings(params.stop))
            self._logit_bias = dict(params.logit_bias)
            self.draft.setChecked(params.draft is Drafting.LOOKUP)
        finally:
            self._updating = False
        self._show_preset()

    def _fill_presets(self) -> None:
        """The preset box's entries: "Model's defaults" first while the loaded model has any."""
        defaults = self._models.model_defaults
        if defaults == self._presets_for:
            return
        self._presets_for = defaults
        self.preset.clear()
        for index, name in enumerate([*choices(defaults), CUSTOM]):
            self.preset.addItem(name)
            tip = defaults_tip(defaults, FIELD_LABELS) if name == MODEL_DEFAULTS else PRESET_TIPS[name]
            self.preset.setItemData(index, tip, Qt.ToolTipRole)

    def _apply_preset(self, index: int) -> None:
        name = self.preset.itemText(index)
        if name == CUSTOM:
            return
        preset = choices(self._models.model_defaults)[name]
        self.set_params(self.params().with_changes(**{f: getattr(preset, f) for f in PRESET_FIELDS}))
        self._on_params_edited()

    def _show_preset(self) -> None:
        """Which preset the values are, and beside each field where its value comes from."""
        current, defaults = self.params(), self._models.model_defaults
        self.preset.setCurrentText(matching_choice(current, defaults))
        self.preset.setAccessibleDescription(self.preset.currentData(Qt.ToolTipRole) or "")
        self.sources.show(sources(current, defaults))

    def _on_params_edited(self) -> None:
        if self._updating:
            return
        self._show_preset()
        self._hand_over()

    # --- the model's settings ------------------------------------------------------------------

    def system_prompt(self) -> str:
        return self.system_prompt_edit.toPlainText()

    def model_settings(self) -> ModelSettings:
        """The settings the controls show; load options llama.cpp would refuse are left as the
        session has them (the panel says why under the fields)."""
        refused = self.load_settings.problem_text() is not None
        load = values_for(self._models.settings) if refused else self.load_settings.values()
        return ModelSettings(
            sampling=self.params(),
            system_prompt=self.system_prompt(),
            n_ctx=self.n_ctx.value() or None,
            gpu_layers=None if self.gpu_layers.value() < 0 else self.gpu_layers.value(),
            cpu_threads=self.cpu_threads.value() or None,
            template_override=self._template_override,
            **load,
        )

    def show_settings(self, settings: ModelSettings) -> None:
        """Fill the controls in (silently: the session already knows these values). The echo of
        the user's own edit is skipped, or a half-typed stop string would be reformatted under
        the cursor."""
        if self._handing_over:
            return
        self._updating = True
        try:
            self.system_prompt_edit.setPlainText(settings.system_prompt)
            self.n_ctx.setValue(settings.n_ctx or 0)
            self.gpu_layers.setValue(-1 if settings.gpu_layers is None else settings.gpu_layers)
            self.cpu_threads.setValue(settings.cpu_threads or 0)
            self._template_override = settings.template_override
        finally:
            self._updating = False
        self.load_settings.show(settings)
        self.set_params(settings.sampling)
        self.template_label.setText(self._template_description())
        self._show_plan()

    def set_offload_support(self, support: OffloadSupport) -> None:
        """Without GPU offload the layer count means nothing, so it is off and says why: a CPU
        build has none, a CUDA build on a machine without a usable GPU says what it lacks."""
        self._gpu_available = support.gpu
        self.gpu_reason.setText(f"The model runs on the CPU ({support.reason})." if support.reason else NO_GPU_REASON)
        self._enable_model_fields()

    def _show_model(self, description: ModelDescription | None) -> None:
        """The loaded model's name, and the ranges its file allows (its context length and
        layer count); the template editor starts from its template. For a server's model, what
        the server decides is off and says so."""
        self._description = description
        info = self._info = description.info if description else None
        self._fill_presets()
        self._show_preset()
        self._updating = True
        try:
            self.n_ctx.setMaximum(info.context_length if info and info.context_length else MAX_CONTEXT)
            # block_count repeating layers, plus the output layer llama.cpp also offloads.
            self.gpu_layers.setMaximum(info.block_count + 1 if info and info.block_count else MAX_GPU_LAYERS)
        finally:
            self._updating = False
        name = description.record_name if description else None
        self.model_name.setText(name or "No model loaded")
        self.model_name.setToolTip(plain_tooltip(name) if name else "")
        self._enable_model_fields()
        self.template_label.setText(self._template_description())
        self._show_plan()

    def _enable_model_fields(self) -> None:
        """The fields wait for a model; the labels, its name ("No model loaded") and the notes
        stay readable (a disabled box greys them all, below the contrast text needs)."""
        description = self._description
        remote = description is not None and description.is_remote
        local = self._info is not None  # a file's header: what the load settings apply to
        self.system_prompt_edit.setEnabled(description is not None)
        for field in (self.n_ctx, self.cpu_threads, self.template_button):
            field.setEnabled(local)
        self.gpu_layers.setEnabled(self._gpu_available and local)
        self.load_settings.set_enabled(local)
        self.gpu_reason.setVisible(not self._gpu_available and not remote)
        self.server_note.setVisible(remote)
        unsent = description.unsent_fields if description is not None else ()
        for field, spin in self._sampling_fields().items():
            spin.setEnabled(field not in unsent)
        self.draft.setEnabled(not remote)
        self.remote_note.setText(remote_fields_note(unsent) if remote else "")
        self.remote_note.setVisible(remote)

    def _template_description(self) -> str:
        if self._description is not None and self._description.is_remote:
            return SERVER_TEMPLATE_TEXT
        if self._template_override:
            return "Your edited one"
        if self._info is None:
            return "Automatic"
        if self._info.has_chat_template:
            return "The model's own"
        return f"“{fallback_name(self._info)}” fallback (none in the file)"

    def _on_model_edited(self) -> None:
        if not self._updating:
            self._hand_over()

    def _hand_over(self) -> None:
        """Give the user's edit to the session, which keeps and applies it."""
        self._handing_over = True
        try:
            self._models.update_settings(self.model_settings())
        finally:
            self._handing_over = False
        self._show_plan()

    def _show_plan(self) -> None:
        """The memory plan for the load settings shown (before a reload: it is a plan); none
        without a file loaded."""
        plan = self._models.memory_plan(settings=self.model_settings()) if self._info is not None else None
        self.load_settings.show_plan(plan)
        self.n_ctx.setAccessibleDescription(self.load_settings.plan_line.text() if plan is not None else "")

    def edit_template(self) -> TemplateEditor | None:
        """Open the chat-template editor for the loaded model (non-modal); returns it."""
        if self._info is None:
            return None
        editor = TemplateEditor(self._info, self._template_override, self)
        editor.setAttribute(Qt.WA_DeleteOnClose)
        editor.templateOverrideChanged.connect(self._set_template_override)
        editor.open()
        return editor

    def _set_template_override(self, override: str | None) -> None:
        self._template_override = override
        self.template_label.setText(self._template_description())
        self._on_model_edited()


def _note(text: str = "") -> QLabel:
    """A muted, wrapping note under a field, hidden until it applies."""
    label = QLabel(text)
    label.setWordWrap(True)
    set_tone(label, Tone.MUTED)
    label.hide()
    return label


def _sampling_spin(name: str) -> QSpinBox | QDoubleSpinBox:
    """A control for one sampling parameter, with exactly the range SamplingParams accepts.

    A bound the parameter may not reach (top-p of 0 keeps no words at all) is replaced by the
    nearest value the control can show."""
    bounds = BOUNDS[name]
    if bounds.whole:
        low = int(bounds.low) + 1 if bounds.low_open else int(bounds.low)
        spin = _int(low, int(bounds.high), int(bounds.step))
    else:
        spin = QDoubleSpinBox()
        spin.setDecimals(DECIMALS)
        spin.setRange(bounds.low + 0.01 if bounds.low_open else bounds.low, bounds.high)
        spin.setSingleStep(bounds.step)
        spin.setKeyboardTracking(False)
    if bounds.off_at_zero:
        spin.setSpecialValueText("Off")
    _may_shrink(spin)
    return spin


def _int(low: int, high: int, step: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setKeyboardTracking(False)  # one change when the typed number is complete, not per digit
    spin.setGroupSeparatorShown(True)
    _may_shrink(spin)
    return spin


def _may_shrink(spin: QAbstractSpinBox) -> None:
    """A spin box is never narrower than its widest value ("1,048,576 tokens") by default;
    in a narrow side panel it may be, down to what shows a short value."""
    spin.setSizePolicy(QSizePolicy.Preferred, spin.sizePolicy().verticalPolicy())
