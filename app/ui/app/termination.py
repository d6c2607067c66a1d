"""SIGTERM (logout, `kill`) and SIGINT (Ctrl+C) as a Qt signal, so Hearth can close properly.

Python's default for either ends the process on the spot: no settings saved, and a streaming
reply left to be found interrupted at the next start. And Python runs signal handlers only
between bytecodes, never while Qt's event loop waits in C++; so the signal arrives as a byte on
a socket pair (signal.set_wakeup_fd) that a QSocketNotifier watches.
"""

from __future__ import annotations

import logging
import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier, Signal

log = logging.getLogger(__name__)

HANDLED = (signal.SIGTERM, signal.SIGINT)


class TerminationSignals(QObject):
    """Installs the handlers when created; one per process, on the GUI thread.

    Signals:
        received(): SIGTERM or SIGINT arrived.
    """

    received = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._receiver, self._sender = socket.socketpair()
        for end in (self._receiver, self._sender):
            end.setblocking(False)
        signal.set_wakeup_fd(self._sender.fileno())
        for number in HANDLED:
            signal.signal(number, lambda *_: None)  # a Python handler, so the wakeup byte is written
        self._notifier = QSocketNotifier(self._receiver.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_wakeup)

    def _on_wakeup(self) -> None:
        numbers = self._receiver.recv(64)
        log.info("received %s", ", ".join(signal.Signals(n).name for n in numbers))
        self.received.emit()
