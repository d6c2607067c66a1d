"""The few waits of pytest-qt's qtbot that tests/support/window_stack.py and tool_window.py ask
of their caller, for the benchmarks that open the window without pytest."""

from __future__ import annotations

import time

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication


class Bot:
    def waitSignal(self, signal, timeout: int):  # noqa: N802 (qtbot's name)
        class Waiting:
            def __enter__(self_inner):
                self_inner.loop = QEventLoop()
                signal.connect(self_inner.loop.quit)
                QTimer.singleShot(timeout, self_inner.loop.quit)
                return self_inner

            def __exit__(self_inner, *exc):
                if exc[0] is None:
                    self_inner.loop.exec()
                signal.disconnect(self_inner.loop.quit)
                return False

        return Waiting()

    def waitUntil(self, condition, timeout: int = 60_000) -> None:  # noqa: N802
        end = time.monotonic() + timeout / 1000
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError("waited too long")
            QApplication.processEvents()
            time.sleep(0.001)

    def waitExposed(self, widget, timeout: int = 5_000) -> None:  # noqa: N802
        self.waitUntil(widget.isVisible, timeout)

    def wait(self, ms: int) -> None:
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            QApplication.processEvents()
            time.sleep(0.001)

    def wait_until(self, condition, timeout_s: float = 60.0) -> None:
        self.waitUntil(condition, int(timeout_s * 1000))
