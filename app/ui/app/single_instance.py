"""One Hearth per user profile: a second launch brings the running window forward instead.

Two Hearths on one conversation database would each take the other's streaming reply for
one left by a crash and mark it interrupted, and would overwrite each other's settings. So the
first instance holds a lock file in the data folder and listens on a local socket; a later
launch finds the lock taken, connects to the first (the connection is the whole message:
"show your window"), and exits. The lock names its
owner's PID, so a Hearth that was killed does not keep the next one out.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from ...owners.paths import INSTANCE_LOCK_FILE

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT_MS = 1000


class SingleInstance(QObject):
    """The lock and the socket of the first Hearth on a data folder.

    Signals:
        activationRequested(): another launch asked this one to show its window.
    """

    activationRequested = Signal()

    def __init__(self, data_dir: Path, parent: QObject | None = None):
        super().__init__(parent)
        self._lock = QLockFile(str(data_dir / INSTANCE_LOCK_FILE))
        self._lock.setStaleLockTime(0)  # stale only when its process is gone, however old
        self._name = "hearth-" + hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        """Become the running Hearth, listening for later launches; False if one already is."""
        if not self._lock.tryLock(0):
            return False
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        QLocalServer.removeServer(self._name)  # a socket file left by a killed Hearth; the lock is ours
        if not self._server.listen(self._name):
            log.warning("a later launch can't reach this one: %s", self._server.errorString())
        self._server.newConnection.connect(self._on_connection)
        return True

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
        self._lock.unlock()

    def _on_connection(self) -> None:
        while (socket := self._server.nextPendingConnection()) is not None:
            socket.abort()
            socket.setParent(None)  # Python owns it now: freed with the last reference, below
        self.activationRequested.emit()

    def activate_running(self) -> bool:
        """Ask the running Hearth to show its window; False if it did not answer."""
        socket = QLocalSocket()
        socket.connectToServer(self._name)
        if not socket.waitForConnected(_CONNECT_TIMEOUT_MS):
            log.warning("Hearth is running but did not answer: %s", socket.errorString())
            return False
        socket.disconnectFromServer()
        return True
