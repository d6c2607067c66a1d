"""The right panel's Parameters page: how replies are sampled, and the loaded model's settings.

A view of the `ModelSession`: it shows the current model's `ModelSettings` and hands every
change the user makes to the session, which keeps it (per model) and applies it; the session's
settingsChanged signal brings the values back here. The panel stores nothing itself.

Every control's range comes from what the engine accepts: `sampling.BOUNDS` for sampling,
engine/options.py for the load settings (the context length refuses under 64 tokens, as
`hearth chat --ctx` does), so the panel cannot produce settings the engine would reject. Its
three boxes are laid out by sampling_box.py, reply_box.py and model_box.py; the panel keeps
their controls under the names the window and the tests use, and does the wiring.

A model whose file gives its author's sampling values (`general.sampling.*`) has them as the
"Model's defaults" preset, and starts with them; under each sampling label a muted word says
where the value comes from: the model, a preset, Hearth's default, or the user
(sampling_sources.py, which also puts it in the field's accessible description).

For a model on a remote server the system prompt and sampling apply as for a file, but the
server chooses the context length, GPU layers and threads and applies its own chat template:
those controls are off, and say so. Which sampling fields a server obeys cannot be asked, so a
note names llama.cpp's extensions (other servers may ignore them) and the fields this server
is not sent (engine/remote/request.py), whose controls are off, as is "Draft from the conversation"
(prompt-lookup decoding, engine/lookup.py: a local model's way of decoding).

The Model box's load options (flash attention, KV cache type, mmap, mlock) and the live memory
plan under the context length are load_settings.py's; the panel places and wires them, and
re-plans (`ModelSession.memory_plan`) whenever a load setting changes. The projector a local
model reads images with, and the user's choice of another (the `mmproj` setting, a load option
too), are projector_row.py's; the row is hidden for a server's model.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from ...engine.gguf.modelfile import ModelInfo
from ...engine.options import context_ceiling, gpu_layer_ceiling
from ...engine.sampling import Drafting, ModelDefaults, SamplingParams
from ...engine.templates.chat_template import fallback_name
from ...engine.types import ModelDescription, ModelSettings, OffloadSupport
from ...owners.model_session import ModelSession
from ..widgets.tooltips import plain_tooltip
from .controls import AUTOMATIC
from .load_settings import values_for
from .model_box import ALL_LAYERS, AUTOMATIC_THREADS, NO_GPU_REASON, ModelBox
from .reply_box import ReplyBox
from .sampling_box import FIELD_LABELS, SamplingBox, remote_fields_note
from .sampling_sources import CUSTOM, MODEL_DEFAULTS, PRESET_FIELDS, choices, defaults_tip, matching_choice, sources
from .stop_strings import format_stop_strings, parse_stop_strings
from .template_editor import TemplateEditor

PRESET_TIPS = {
    "Precise": "Always the likeliest word: the same answer every time. For facts, code and extraction.",
    "Balanced": "A little variety while staying on topic. A good default for conversation.",
    "Creative": "More varied, surprising wording. For brainstorming and fiction.",
    CUSTOM: "Your own settings (any change to the values below).",
}
SERVER_TEMPLATE_TEXT = "The server applies its own chat template"


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
        self._mmproj: str | None = None  # the projector the user chose; None: the one beside the model
        self._logit_bias: dict[int, float] = {}
        self._presets_for: ModelDefaults | None = None  # the model defaults the preset box offers

        self._gpu_available = True
        self._build()
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
        models.offloadSupportChanged.connect(self.set_offload_support)
        models.reloadNeededChanged.connect(self.reload_notice.setVisible)
        self._show_plan()

    # --- construction ----------------------------------------------------------------------------

    def _build(self) -> None:
        """The three boxes, their controls by the names the window and tests use, and the
        wiring: every edit goes to the session (`_hand_over`)."""
        self.sampling_box, self.reply_box, self.model_box = SamplingBox(), ReplyBox(), ModelBox(self)
        sampling, reply, model = self.sampling_box, self.reply_box, self.model_box
        self.preset, self.sources, self.remote_note = sampling.preset, sampling.sources, sampling.remote_note
        (self.temperature, self.top_k, self.top_p, self.min_p, self.repeat_penalty, self.repeat_last_n,
         self.presence_penalty, self.frequency_penalty) = sampling.fields.values()
        self.max_tokens, self.stop, self.fixed_seed, self.seed, self.draft = (
            reply.max_tokens, reply.stop, reply.fixed_seed, reply.seed, reply.draft)
        self.system_prompt_edit, self.n_ctx, self.gpu_layers, self.cpu_threads = (
            model.system_prompt_edit, model.n_ctx, model.gpu_layers, model.cpu_threads)
        self.gpu_reason, self.server_note, self.template_label, self.template_button = (
            model.gpu_reason, model.server_note, model.template_label, model.template_button)
        self.reload_notice, self.reload_label, self.reload_button = (
            model.reload_notice, model.reload_label, model.reload_button)
        self.model_name, self.load_settings, self.projector = model.model_name, model.load_settings, model.projector
        self._labels = [*sampling.labels, *reply.labels, *model.labels]
        self._fill_presets()

        self.preset.activated.connect(self._apply_preset)
        for spin in sampling.fields.values():
            spin.valueChanged.connect(self._on_params_edited)
        self.max_tokens.valueChanged.connect(self._on_params_edited)
        self.stop.textEdited.connect(self._on_params_edited)
        self.draft.toggled.connect(self._on_params_edited)
        self.seed.valueChanged.connect(self._on_params_edited)
        self.fixed_seed.toggled.connect(self._on_params_edited)
        self.system_prompt_edit.textChanged.connect(self._on_model_edited)
        self.n_ctx.valueChanged.connect(self._on_model_edited)
        self.gpu_layers.valueChanged.connect(self._on_model_edited)
        self.cpu_threads.valueChanged.connect(self._on_model_edited)
        self.load_settings.edited.connect(self._on_model_edited)
        self.load_settings.largestContextChosen.connect(self.n_ctx.setValue)  # as if typed: handed over
        self.projector.chosen.connect(self._set_projector)
        self.template_button.clicked.connect(lambda _checked=False: self.edit_template())
        self.reload_button.clicked.connect(lambda _checked=False: self._models.reload())

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
            n_ctx=None if self.n_ctx.value() == AUTOMATIC else self.n_ctx.value(),
            gpu_layers=None if self.gpu_layers.value() == ALL_LAYERS else self.gpu_layers.value(),
            cpu_threads=None if self.cpu_threads.value() == AUTOMATIC_THREADS else self.cpu_threads.value(),
            template_override=self._template_override,
            mmproj=self._mmproj,
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
            self.n_ctx.setValue(AUTOMATIC if settings.n_ctx is None else settings.n_ctx)
            self.gpu_layers.setValue(ALL_LAYERS if settings.gpu_layers is None else settings.gpu_layers)
            self.cpu_threads.setValue(AUTOMATIC_THREADS if settings.cpu_threads is None else settings.cpu_threads)
            self._template_override = settings.template_override
            self._mmproj = settings.mmproj
        finally:
            self._updating = False
        self.load_settings.show(settings)
        self.projector.show_for(self._model_path(), settings.mmproj)
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
            self.n_ctx.setMaximum(context_ceiling(info.context_length if info else 0))
            self.gpu_layers.setMaximum(gpu_layer_ceiling(info.block_count if info else 0))
        finally:
            self._updating = False
        name = description.record_name if description else None
        self.model_name.setText(name or "No model loaded")
        self.model_name.setToolTip(plain_tooltip(name) if name else "")
        self._enable_model_fields()
        self.template_label.setText(self._template_description())
        # The session holds this model's settings already (settingsChanged follows): its choice.
        self.projector.show_for(self._model_path(), self._models.settings.mmproj, again=True)
        self._show_plan()

    def _model_path(self) -> Path | None:
        """The loaded model's file (None: no model, or a server's)."""
        return self._description.path if self._description is not None else None

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
        self.projector.set_shown(not remote)
        unsent = description.unsent_fields if description is not None else ()
        for field, spin in self.sampling_box.fields.items():
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

    def _set_projector(self, chosen: str | None) -> None:
        """A projector the row checked fits the model (None: the one beside it): kept like any
        load option, and applied on reload."""
        self._mmproj = chosen
        self.projector.show_for(self._model_path(), chosen)
        self._on_model_edited()
