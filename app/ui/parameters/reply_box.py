"""The parameters panel's Reply box: how long a reply may get, the text that ends it, a fixed
seed, and drafting from the conversation (prompt lookup). The panel wires the fields; this lays
them out."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QGroupBox, QLineEdit, QWidget

from ...engine.sampling import BOUNDS
from ..widgets.form_grid import FormGrid
from .controls import add_row, may_shrink, sampling_spin

DRAFT_TIP = ("Prompt lookup: guess the next words by copying what followed the same words earlier in the "
             "conversation, and check several guesses in one step. A guess is kept only where the model "
             "picks that same word, so the reply is the model's own; it comes faster where it repeats its "
             "input (code edits, quotes). For models on this computer; a server decides for its own.")
SEED_TIP = ("The random seed. Fixed: the same settings and conversation give the same reply "
            "every time, handy for comparing. Unticked: a new seed for every reply.")


class ReplyBox(QGroupBox):
    """The Reply box; `labels`: its label column, which the panel lines up with the others'."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Reply", parent)
        self.labels: list[QWidget] = []
        self.max_tokens = sampling_spin("max_tokens")
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
        may_shrink(self.seed)

        form = FormGrid(self)
        add_row(form, self.labels, "Max length", self.max_tokens,
                "The longest a reply may get, in tokens (a token is roughly ¾ of a word). "
                "The reply stops here even mid-sentence. Typical: 512–2048.")
        add_row(form, self.labels, "Stop at", self.stop,
                "Text that ends the reply as soon as the model writes it (it is not shown). "
                "Separate several with commas. Write \\n for a line break, \\, for a comma, "
                "\\s for a space at the start or end, \\\\ for a backslash. "
                "Example: \\n\\nUser:, ###")
        # The tick box stands where a label would: "Fixed seed [1234]" reads as one setting.
        self.fixed_seed.setToolTip(SEED_TIP)
        self.seed.setToolTip(SEED_TIP)
        self.seed.setAccessibleName("Seed")
        self.seed.setAccessibleDescription("The seed used while Fixed seed is ticked")
        form.add_row(self.fixed_seed, self.seed)
        self.labels.append(self.fixed_seed)

        self.draft = QCheckBox("Draft from the conversation")
        self.draft.setToolTip(DRAFT_TIP)
        self.draft.setAccessibleName("Draft from the conversation (prompt lookup)")
        self.draft.setAccessibleDescription(DRAFT_TIP)
        form.add_wide(self.draft)
        self.fixed_seed.toggled.connect(self.seed.setEnabled)
