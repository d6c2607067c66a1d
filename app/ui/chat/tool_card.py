"""One tool call the model wrote, shown in the transcript as it is asked about, runs and ends.

The card is the user's say over a call (#27): it names the tool and its server, shows the
arguments whole as formatted JSON (an approval that hid them was Jan's #5656), and offers
Allow once, Always allow this tool and Deny, each reachable by Tab and by Alt and its letter.
The server's read-only and destructive hints are shown as what they are, the server's word:
they never skip the question. Esc does not deny: it is the window's Stop, and one stray key
must not answer for the user.

Everything shown that came from the server or the model is inert text: names through
printable/shorten and html.escape, arguments and results in plain text boxes (PlainBox). A
decision is taken only once the card has been on screen ARM_MS: a key pressed for the message
box an instant before the card took the focus must not run a tool.

The result stays collapsed to a line until "Show result" asks for it; its boxes and thumbnails
are made then, so a finished card costs nothing to lay out (widgets/tool_result.py).
"""

from __future__ import annotations

import html
from enum import Enum

from PySide6.QtCore import QElapsedTimer, QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ...common.text import shorten
from ...tool_servers.approval import Decision, PendingCall
from ...tool_servers.types import ToolOutcome
from ..widgets.announce import announce
from ..widgets.badge import Badge
from ..widgets.colors import Tone, error_color, mix, set_tone
from ..widgets.plain_box import PlainBox
from ..widgets.tool_result import ResultView, outcome_words

ARM_MS = 500  # how long the card is on screen before a decision counts
NAME_CHARS = 60  # of a tool's or a server's name, on the card


class CardState(Enum):
    AWAITING = "awaiting"  # asking the user
    RUNNING = "running"
    DONE = "done"
    DENIED = "denied"


class ToolCallCard(QFrame):
    """A call the model wrote: AWAITING the user's answer, RUNNING, DONE with its outcome, or
    DENIED. `awaiting` False starts it RUNNING (a tool the user always allows).

    A first decision moves the card on by itself (RUNNING when allowed, DENIED when denied), so
    the keyboard lands on Stop at once; set_running() and set_denied() are then no-ops.

    Signals:
        decided(object): the user's Decision, once: ALLOW_ONCE, ALWAYS (this tool of this
            server, from now on) or DENY.
        stopRequested(): Stop while the call runs: the caller cancels it and answers with
            set_outcome (an error outcome saying it was stopped).
        heightChanged(int): the card wants this height (its state changed, the result was
            shown or hidden): whoever laid it out makes room.
    """

    decided = Signal(object)
    stopRequested = Signal()
    heightChanged = Signal(int)

    def __init__(self, pending: PendingCall, awaiting: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pending = pending
        self.state = CardState.AWAITING
        self._tool, self._server = shorten(pending.tool, NAME_CHARS), shorten(pending.server, NAME_CHARS)
        self._shown = QElapsedTimer()  # since the card first showed: decisions wait ARM_MS
        self._running = QElapsedTimer()
        self._error = False
        self._result: ResultView | None = None
        self._outcome: ToolOutcome | None = None
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName(f"Tool call: {self._tool} from {self._server}")

        self.title = QLabel(self)
        self.title.setTextFormat(Qt.TextFormat.RichText)  # each foreign piece is escaped
        self.title.setWordWrap(True)
        badges = []
        for hint, text, tone in ((pending.read_only, "Read-only", Tone.MUTED),
                                 (pending.destructive, "Destructive", Tone.ERROR)):
            if hint:
                badge = Badge(f"{text} · the server says", tone, self)
                badge.setAccessibleName(f"{text}, the server says")
                badge.setToolTip(f"The server describes this tool as {text.lower()}. Hearth cannot check "
                                 "that, so it asks you all the same.")
                badges.append(badge)
        self.arguments = PlainBox(pending.arguments, "Arguments",
                                  f"The arguments the model wrote for {self._tool}, as JSON", max_lines=10)

        self.allow_button = self._button("&Allow once", "Allow once",
                                         f"Run {self._tool} this once; Hearth asks again next time (Alt+A)")
        self.always_button = self._button("Al&ways allow this tool", "Always allow this tool",
                                          f"Run {self._tool} now and from now on without asking, for this server "
                                          "as it is configured now (Alt+W)")
        self.deny_button = self._button("&Deny", "Deny", "Don't run it; the model is told you denied the call (Alt+D)")
        self.allow_button.clicked.connect(lambda: self._decide(Decision.ALLOW_ONCE))
        self.always_button.clicked.connect(lambda: self._decide(Decision.ALWAYS))
        self.deny_button.clicked.connect(lambda: self._decide(Decision.DENY))
        self._decision_row = self._row(self.allow_button, self.always_button, self.deny_button)

        self.busy = QProgressBar(self)
        self.busy.setRange(0, 0)  # busy: no end known
        self.busy.setTextVisible(False)
        self.busy.setFixedSize(96, 8)
        self.busy.setAccessibleName("Running")
        self.elapsed = QLabel(self)
        self.elapsed.setTextFormat(Qt.TextFormat.PlainText)
        set_tone(self.elapsed, Tone.MUTED)
        self.stop_button = self._button("&Stop", "Stop the call",
                                        "Stop: cancel this call and end the turn; the model is told it was stopped (Alt+S)")
        self.stop_button.clicked.connect(self._stop)
        self._running_row = self._row(self.stop_button, self.busy, self.elapsed)
        self._ticker = QTimer(self, interval=1000)
        self._ticker.timeout.connect(self._tick)

        self.status = QLabel(self)  # how it ended, one line
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.result_toggle = QToolButton(self)
        self.result_toggle.setCheckable(True)
        self.result_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.result_toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.result_toggle.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.result_toggle.setAutoRaise(True)
        self.result_toggle.toggled.connect(self._toggle_result)
        self._set_toggle_words(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(8)
        layout.addWidget(self.title)
        if badges:
            layout.addWidget(self._row(*badges))
        layout.addWidget(self.arguments)
        layout.addWidget(self._decision_row)
        layout.addWidget(self._running_row)
        layout.addWidget(self.status)
        layout.addWidget(self.result_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        self.setTabOrder(self.arguments, self.allow_button)
        self.setTabOrder(self.allow_button, self.always_button)
        self.setTabOrder(self.always_button, self.deny_button)
        self._show_state()
        if not awaiting:
            self.set_running()

    # -- the caller's API --------------------------------------------------------------------

    def set_running(self) -> None:
        """The call was allowed and runs: a busy bar, the time it has taken, Stop."""
        if self.state is not CardState.AWAITING:
            return
        self.state = CardState.RUNNING
        self._running.start()
        self._ticker.start()
        self._tick()
        self._show_state()
        announce(self, f"Running {self._tool}")

    def set_outcome(self, outcome: ToolOutcome) -> None:
        """The call ended (or failed, timed out, was stopped): its result, collapsed to a line."""
        if self.state in (CardState.DONE, CardState.DENIED):
            return
        if outcome.elapsed_s <= 0 and self._running.isValid():
            seconds = self._running.elapsed() / 1000
        else:
            seconds = outcome.elapsed_s
        self._ticker.stop()
        self.state = CardState.DONE
        self._outcome = outcome
        self._error = outcome.error
        words = outcome_words(outcome, seconds)
        self.status.setText(words)
        set_tone(self.status, Tone.ERROR if outcome.error else Tone.MUTED)
        self.result_toggle.setAccessibleDescription(words)
        self._show_state()
        announce(self, f"{self._tool}: {words}", urgent=outcome.error)

    def set_denied(self) -> None:
        """The call was denied (here, or by the caller): the model is told so."""
        if self.state not in (CardState.AWAITING, CardState.RUNNING):
            return
        self._ticker.stop()
        self.state = CardState.DENIED
        self.status.setText("Denied: the model is told you did not allow this call.")
        set_tone(self.status, Tone.MUTED)
        self._show_state()

    def preferred_height(self, width: int | None = None) -> int:
        """The height the card needs at `width` (its own width when None)."""
        width = self.width() if width is None else width
        layout = self.layout()
        layout.activate()
        if layout.hasHeightForWidth():
            return max(layout.totalHeightForWidth(width), layout.totalMinimumSize().height())
        return layout.totalSizeHint().height()

    def take_focus(self) -> None:
        """Give the keyboard to the card's first control for its state (Allow once when asking)."""
        target = {CardState.AWAITING: self.allow_button, CardState.RUNNING: self.stop_button,
                  CardState.DONE: self.result_toggle}.get(self.state, self.arguments)
        target.setFocus(Qt.FocusReason.OtherFocusReason)

    def result_view(self) -> ResultView | None:
        """The shown result's widgets, made the first time "Show result" asks for them."""
        return self._result

    # -- inside ---------------------------------------------------------------------------------

    def _row(self, *widgets: QWidget) -> QWidget:
        """The widgets side by side from the left, centred on one line."""
        row = QWidget(self)
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in widgets:
            layout.addWidget(widget, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addStretch(1)
        return row

    def _button(self, text: str, name: str, description: str) -> QPushButton:
        button = QPushButton(text, self)
        button.setAccessibleName(name)
        button.setAccessibleDescription(description)
        button.setToolTip(description)
        button.setAutoDefault(True)  # Enter presses the button that has the focus, as Space does
        button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        return button

    def _decide(self, decision: Decision) -> None:
        if self.state is not CardState.AWAITING or not self._shown.isValid() or self._shown.elapsed() < ARM_MS:
            return
        if decision is Decision.DENY:
            self.set_denied()
        else:
            self.set_running()
        self.decided.emit(decision)

    def _stop(self) -> None:
        if self.state is CardState.RUNNING:
            self.stop_button.setEnabled(False)
            self.stop_button.setText("Stopping…")
            self.stopRequested.emit()

    def _tick(self) -> None:
        seconds = self._running.elapsed() // 1000
        self.elapsed.setText(f"Running… {seconds} s" if seconds else "Running…")

    def _show_state(self) -> None:
        """Show the controls of the card's state; the keyboard stays in the card if its control went."""
        focused = QApplication.focusWidget()
        had_focus = focused is not None and self.isAncestorOf(focused)
        state = self.state
        tool, server = html.escape(self._tool), html.escape(self._server)
        title = {CardState.AWAITING: f"Run <b>{tool}</b> from <b>{server}</b>?",
                 CardState.RUNNING: f"Running <b>{tool}</b> from <b>{server}</b>"}
        self.title.setText(title.get(state, f"<b>{tool}</b> from <b>{server}</b>"))
        self._decision_row.setVisible(state is CardState.AWAITING)
        self._running_row.setVisible(state is CardState.RUNNING)
        self.status.setVisible(state in (CardState.DONE, CardState.DENIED))
        self.result_toggle.setVisible(state is CardState.DONE)
        self.setAccessibleDescription({CardState.AWAITING: "Waiting for your answer", CardState.RUNNING: "Running",
                                       CardState.DENIED: "Denied"}.get(state, self.status.text()))
        if had_focus:
            self.take_focus()
        self.update()
        self.heightChanged.emit(self.preferred_height())

    def _toggle_result(self, shown: bool) -> None:
        if shown and self._result is None and self._outcome is not None:
            self._result = ResultView(self._outcome, self._tool, self)
            self.layout().addWidget(self._result)
            previous = self.result_toggle
            for box in self._result.boxes:  # made last, they would come last in the window's order
                QWidget.setTabOrder(previous, box)
                previous = box
        if self._result is not None:
            self._result.setVisible(shown)
        self._set_toggle_words(shown)
        self.heightChanged.emit(self.preferred_height())

    def _set_toggle_words(self, shown: bool) -> None:
        self.result_toggle.setText("Hide &result" if shown else "Show &result")
        self.result_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.result_toggle.setAccessibleName("Hide result" if shown else "Show result")

    # -- events ---------------------------------------------------------------------------------

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: A002 (Qt's name)
        """Tab goes on as the window orders it. Qt asks a control's parents first, and the
        transcript the card lies in (a QTextBrowser) answered by moving among its own links."""
        window = self.window()
        return window.focusNextPrevChild(next) if window is not self else super().focusNextPrevChild(next)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._shown.isValid():
            self._shown.start()
            if self.state is CardState.AWAITING:
                announce(self, f"Hearth asks: run {self._tool} from {self._server}?")

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:
            self.heightChanged.emit(self.preferred_height())
        return handled

    def paintEvent(self, event: QPaintEvent) -> None:
        """A rounded frame, a shade off the page, its edge red when the call failed."""
        palette = self.palette()
        base, text = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)
        edge = error_color(palette) if self._error else mix(base, text, 0.25)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(edge, 1.5 if self._error else 1))
        painter.setBrush(mix(base, text, 0.035))
        painter.drawRoundedRect(self.rect().toRectF().adjusted(0.75, 0.75, -0.75, -0.75), 6, 6)
