"""The Model section's load options and its live memory plan (the parameters panel places them).

Flash attention (Auto/On/Off), the KV cache type (one choice for K and V), mmap and mlock, as
`ModelSettings` keeps them per model; like the context length they apply on reload. A
quantized V cache with flash attention Off cannot load (llama.cpp refuses it): picking that
combination shows load_checks' reason under the fields, and the panel hands the session its
previous options instead (`values_for`), so nothing refused is kept or reloaded.

The plan line under the context length says what a load with the fields' values would take
now ("Memory: 612 MB of 20.1 GB free — fits"), its numbers in the tooltip; when it is tight or
does not fit, a button offers the largest context that fits (`largestContextChosen`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QVBoxLayout, QWidget

from ...engine.load_checks import load_options_problem
from ...engine.memory_plan import Fit, MemoryPlan
from ...engine.options import LOAD_OPTIONS, Word
from ...engine.types import FlashAttention, KvCacheType, ModelSettings
from ..models import plan_text
from ..widgets.colors import Tone, set_tone
from ..widgets.tooltips import plain_tooltip

# The load options picked from choices (a word or a switch), as ModelSettings fields: these controls'.
FIELDS = tuple(option.setting for option in LOAD_OPTIONS if option.kind is bool or issubclass(option.kind, Word))
FLASH_TIP = ("Attention computed in one fused step: less memory for long contexts, usually faster on a "
             "graphics card. Auto lets llama.cpp decide (off on the CPU with an f16 cache, where it is no "
             "faster); On and Off force it. A quantized cache needs it on (Auto or On).")
KV_TIP = ("How the model's memory of the conversation (the KV cache) is stored. f16: full precision. "
          "q8_0: about half of f16's memory (measured: 0.54 of f16's growth from 512 to 32k tokens on "
          "Gemma 3 270M), replies nearly the same. q4_0: about a quarter, with some loss of quality. "
          "A quantized cache needs flash attention (Auto or On).")
MMAP_TIP = ("Map the model file into memory instead of reading it: loads faster, and the system can drop "
            "and re-read pages it needs room for. Off reads the whole file into RAM first.")
MLOCK_TIP = ("Keep the model's weights in RAM so the system never pages them out: steady speed when memory "
             "runs short. The system may refuse past a per-user limit; the model then loads without the "
             "lock and the status bar says why.")
FLASH_CHOICES = ((FlashAttention.AUTO, "Auto"), (FlashAttention.ON, "On"), (FlashAttention.OFF, "Off"))
KV_CHOICES = tuple(KvCacheType)


def values_for(settings: ModelSettings) -> dict:
    """The load options these controls show, as ModelSettings fields."""
    return {field: getattr(settings, field) for field in FIELDS}


class LoadSettings(QObject):
    """The load options' controls and the plan line; the panel lays them out and wires them.

    Signals:
        edited(): the user changed one of the options.
        largestContextChosen(int): the user asked for the largest context that fits.
    """

    edited = Signal()
    largestContextChosen = Signal(int)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._updating = False
        self._largest = 0
        self.flash_attn = QComboBox()
        for value, label in FLASH_CHOICES:
            self.flash_attn.addItem(label, str(value))  # Qt hands a str enum back as a plain str
        self.kv_type = QComboBox()  # "k,v" per entry; a K and V set apart (the CLI) get one of their own
        self.kv_type.setAccessibleName("KV cache type")
        self.use_mmap = QCheckBox("Map the file (mmap)")
        self.use_mmap.setToolTip(MMAP_TIP)
        self.use_mmap.setAccessibleDescription(MMAP_TIP)
        self.use_mlock = QCheckBox("Lock in RAM (mlock)")
        self.use_mlock.setToolTip(MLOCK_TIP)
        self.use_mlock.setAccessibleDescription(MLOCK_TIP)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        set_tone(self.problem, Tone.ERROR)
        self.problem.hide()

        self.plan_line = QLabel()
        self.plan_line.setWordWrap(True)
        self.plan_line.setTextFormat(Qt.TextFormat.PlainText)
        self.plan_line.setAccessibleName("Memory plan")
        self.largest_button = QPushButton()
        self.largest_button.setAccessibleName("Use the largest context that fits")
        self.largest_button.hide()
        self.plan_row = QWidget()
        column = QVBoxLayout(self.plan_row)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.plan_line)
        column.addWidget(self.largest_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.plan_row.hide()

        self._fill_kv(KvCacheType.F16, KvCacheType.F16)
        self.flash_attn.activated.connect(self._on_edited)
        self.kv_type.activated.connect(self._on_edited)
        self.use_mmap.toggled.connect(self._on_edited)
        self.use_mlock.toggled.connect(self._on_edited)
        self.largest_button.clicked.connect(lambda _checked=False: self.largestContextChosen.emit(self._largest))

    # --- the options -----------------------------------------------------------------------------

    def values(self) -> dict:
        """The options the controls show, as ModelSettings fields."""
        kv_k, kv_v = (KvCacheType(kind) for kind in self.kv_type.currentData().split(","))
        return {"flash_attn": FlashAttention(self.flash_attn.currentData()), "kv_type_k": kv_k, "kv_type_v": kv_v,
                "use_mmap": self.use_mmap.isChecked(), "use_mlock": self.use_mlock.isChecked()}

    def problem_text(self) -> str | None:
        """Why the options shown cannot load (llama.cpp would refuse them); None when they can."""
        return load_options_problem(ModelSettings(**self.values()).load_options())

    def show(self, settings: ModelSettings) -> None:
        """Fill the controls in from the session's settings, without counting it as an edit."""
        self._updating = True
        try:
            self.flash_attn.setCurrentIndex(self.flash_attn.findData(str(settings.flash_attn)))
            self._fill_kv(settings.kv_type_k, settings.kv_type_v)
            self.use_mmap.setChecked(settings.use_mmap)
            self.use_mlock.setChecked(settings.use_mlock)
        finally:
            self._updating = False
        self._show_problem()

    def set_enabled(self, enabled: bool) -> None:
        for field in (self.flash_attn, self.kv_type, self.use_mmap, self.use_mlock):
            field.setEnabled(enabled)

    def _fill_kv(self, kv_k: KvCacheType, kv_v: KvCacheType) -> None:
        """The cache types, the same for K and V; K and V set apart (hearth chat --kv-type-k)
        are an entry of their own, so showing them does not change them."""
        self.kv_type.clear()
        for kind in KV_CHOICES:
            self.kv_type.addItem(str(kind), f"{kind},{kind}")
        if kv_k is not kv_v:
            self.kv_type.addItem(f"K {kv_k}, V {kv_v}", f"{kv_k},{kv_v}")
        self.kv_type.setCurrentIndex(self.kv_type.findData(f"{kv_k},{kv_v}"))

    def _on_edited(self) -> None:
        if self._updating:
            return
        self._show_problem()
        self.edited.emit()

    def _show_problem(self) -> None:
        text = self.problem_text()
        self.problem.setText(f"⚠ {text}. Not applied." if text else "")
        self.problem.setVisible(text is not None)
        for field in (self.flash_attn, self.kv_type):
            field.setAccessibleDescription(text or "")

    # --- the plan --------------------------------------------------------------------------------

    def show_plan(self, plan: MemoryPlan | None) -> None:
        """The plan for the fields' values (None: no file to plan, e.g. a server's model)."""
        self.plan_row.setVisible(plan is not None)
        if plan is None:
            self.largest_button.hide()
            return
        line = plan_text.short_line(plan)
        self.plan_line.setText(line)
        tip = f"{plan_text.details(plan)}\n\n{plan_text.HOW}"
        self.plan_line.setToolTip(plain_tooltip(tip))
        self.plan_line.setAccessibleDescription(plan_text.details(plan))
        set_tone(self.plan_line, plan_text.TONES[plan.fit])
        self._largest = plan.largest_context
        offer = plan.fit is not Fit.FITS and plan.largest_context > 0
        self.largest_button.setVisible(offer)
        if offer:
            self.largest_button.setText(f"Use {plan.largest_context:,} tokens (the largest that fits)")
            self.largest_button.setToolTip("Set the context length to the longest one this memory holds "
                                           "with room for the plan's error")
