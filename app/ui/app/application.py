"""Start the GUI: one QApplication, the store, the engine bridge, the owner objects, the window,
the first model."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from ...common.sqlite_files import move_aside
from ...engine.types import ModelSource, RemoteModel
from ...owners import paths
from ...owners.bridge import EngineBridge
from ...owners.chat_session import ChatSession
from ...owners.conversation_documents import ConversationDocuments
from ...owners.conversation_tools import ConversationTools
from ...owners.documents import DocumentLibrary
from ...owners.downloads import DownloadManager
from ...owners.local_server import LocalServer
from ...owners.model_session import ModelSession
from ...owners.remote_servers import RemoteServers
from ...owners.saved_states import open_state_cache
from ...owners.settings import Appearance, Settings
from ...owners.tool_servers import ToolServerManager
from ...store import ConversationStore, DatabaseDamaged, StoreError
from ..widgets.background import run_in_background
from ..window import appearance
from . import crash
from .single_instance import SingleInstance
from .termination import TerminationSignals

log = logging.getLogger(__name__)
RESOURCES = Path(__file__).resolve().parents[3] / "resources"
# Qt's raster engine hands each tall fill (the transcript's, a scroll bar's) to a pool of
# threads and waits for them. A window that repaints 25 times a second while llama.cpp decodes
# on every core then wakes those threads about 2,400 times a second, each taking a decoding
# thread's place: in a long conversation the window's process spent 40-57 ms of CPU a second of
# streaming, 28-30 without the pool (#31). One thread fills as fast, less the handing over.
QT_ENVIRONMENT = {"QT_NO_GUI_THREADPOOL": "1"}


def resources_dir() -> Path:
    """`resources/` in the source tree, or inside a PyInstaller bundle."""
    bundled = getattr(sys, "_MEIPASS", None)
    return Path(bundled) / "resources" if bundled else RESOURCES


def _ensure_streams() -> None:
    """A windowed bundle has no stdout/stderr; give libraries something harmless to write to."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def create_application(choice: Appearance = Appearance.SYSTEM) -> QApplication:
    """The QApplication, in Hearth's style and in the appearance chosen (View → Appearance).
    QT_ENVIRONMENT applies to one made here; a variable the user set is left as it is (Qt asks
    only whether QT_NO_GUI_THREADPOOL is set, so any value keeps the pool off). Processes Hearth
    starts (the engine's, tool servers) inherit them, and draw no widgets."""
    for name, value in QT_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName(paths.APP_NAME)
    app.setApplicationDisplayName(paths.APP_NAME)
    app.setDesktopFileName("hearth")
    app.setStyle("Fusion")  # the same look everywhere
    appearance.apply(app, choice)  # light or dark, or following the system
    icon = resources_dir() / "hearth.svg"
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))
    return app


def first_model(args, models: ModelSession) -> Path | ModelSource | None:
    """The model to open: --model, else the last one used (a file that still exists, or a
    server's model, which loads like a file and says why if the server is off), else the
    embedded default. Reads the keyring and may assemble the default: off the GUI thread."""
    if getattr(args, "model", None):
        return Path(args.model)
    last = models.remembered()
    if isinstance(last, RemoteModel) or (last is not None and last.path.exists()):
        return last
    return paths.default_model()


def run_gui(args) -> int:
    _ensure_streams()
    crash.install()
    config = Settings.for_profile()  # an INI file: readable before the QApplication exists
    app = create_application(config.appearance)
    from ..window.main_window import MainWindow  # after QApplication: widgets need it

    instance = SingleInstance(paths.data_dir())
    if not instance.acquire():
        if instance.activate_running():
            log.info("Hearth is already running: asked it to show its window")
        else:
            QMessageBox.information(None, "Hearth", "Hearth is already running, but did not answer. "
                                    "Close it (or wait until it responds) before starting it again.")
        return 0
    store = open_store(paths.database_path())
    if store is None:
        return 1
    states = open_state_cache(config)
    bridge = EngineBridge(states=states)
    models = ModelSession(bridge, config)
    downloads = DownloadManager(parent=app)  # lives as long as the application
    servers = RemoteServers(config, parent=app)  # like the downloads, outlives the window
    local_server = LocalServer(bridge, models, parent=app)  # serves the loaded model when asked
    tool_servers = ToolServerManager(config.tools, paths.log_dir() / "tool-servers", parent=app)  # start on first use
    conversation_tools = ConversationTools(tool_servers, config.tools, parent=app)
    documents = DocumentLibrary(config.documents, parent=app)  # the index read at once, the model at first use
    session = ChatSession(store, bridge, models, conversation_tools,
                          documents=ConversationDocuments(documents, parent=app))
    window = MainWindow(models, session, config, downloads, servers, local_server, states=states)
    instance.activationRequested.connect(lambda: bring_forward(window))
    TerminationSignals(window).received.connect(window.close)  # as if the user closed it
    window.show()
    # The first engine process (asked about GPUs, then kept for the first load) starts once the
    # window is on screen: on two cores, a Python and llama.cpp starting beside the first paint slowed it.
    after_first_paint(window, bridge.ask_devices)
    window.check_database()
    log.info("window shown %.2f s after launch", time.time() - _process_start())
    probe = os.environ.get("HEARTH_STARTUP_PROBE")
    if probe:
        return _startup_probe(app, Path(probe), bridge, store)

    def load_first(model, error):
        if error is not None:
            window.statusBar().showMessage(f"The default model could not be prepared: {error}")
        elif model is not None:
            models.load(model)

    run_in_background(lambda: first_model(args, models), load_first, window)
    if args.self_test:
        from .self_test import SelfTest

        code = SelfTest(window, args.screenshot).run()
    else:
        QTimer.singleShot(0, lambda: offer_crash_reports(window))
        code = app.exec()
    window.session.close()  # a reply stopped by quitting is kept as stopped, with its statistics
    local_server.shutdown()  # waiting requests get 503, a served reply stops, the port closes
    tool_servers.close()  # every server's process ends with Hearth
    documents.close()  # an indexing run stops after its batch; the next start goes on with it
    downloads.shutdown()  # running downloads keep their .part files and resume next time
    bridge.shutdown()
    window.session.store.close()  # the one in use: a damaged one may have been replaced
    instance.release()
    return code


class _FirstPaint(QObject):
    """Calls `action` once, just after `window` is first painted."""

    def __init__(self, window: QWidget, action: Callable[[], None]):
        super().__init__(window)
        self._window, self._action = window, action
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self._window.removeEventFilter(self)
            QTimer.singleShot(0, self._action)
        return False


def after_first_paint(window: QWidget, action: Callable[[], None]) -> None:
    _FirstPaint(window, action)


def open_store(path: Path) -> ConversationStore | None:
    """The conversation database at path; when it is damaged, the user may have it moved aside
    (renamed beside it, never deleted) and start with an empty one. Any other failure (a file
    from a newer Hearth, a disk error, no permission) is said and Hearth quits: moving a sound
    file aside would hide its conversations. None: Hearth does not start."""
    try:
        return _trash_emptied(ConversationStore(path))
    except DatabaseDamaged as exc:
        if not ask_to_move_aside(str(exc)):
            return None
    except StoreError as exc:
        QMessageBox.critical(None, "Hearth", str(exc))
        return None
    try:
        moved = move_aside(path)
        log.warning("conversation database moved aside to %s", moved)
        return ConversationStore(path)  # empty: no trash
    except (OSError, StoreError) as exc:
        QMessageBox.critical(None, "Hearth", f"Could not start with an empty conversation database: {exc}")
        return None


def _trash_emptied(store: ConversationStore) -> ConversationStore:
    """The store with its trash emptied: it holds only what the window's Undo may bring back (a
    deleted conversation, a deleted version), and no Undo outlives the window that offered it. So
    what the user deleted, and the image files only it used, are gone at the next start, not
    kept forever. A failure here (a damaged page) is the store's to say when it is met again."""
    try:
        store.purge_deleted()
    except StoreError as exc:
        log.warning("could not empty the trash: %s", exc)
    return store


MOVE_ASIDE_BUTTON = "Move it aside and start fresh"


def ask_to_move_aside(problem: str) -> bool:
    box = QMessageBox(QMessageBox.Icon.Critical, "Hearth", problem)
    box.setInformativeText(
        "Hearth can rename the file (it stays beside the new one, nothing in it is deleted) and start "
        "with an empty conversation database, or quit so you can deal with it yourself.")
    move = box.addButton(MOVE_ASIDE_BUTTON, QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    return box.clickedButton() is move


def bring_forward(window) -> None:
    """Show the window on top, restored if minimized (another launch asked for it)."""
    log.info("another launch of Hearth: showing this window instead")
    window.setWindowState(window.windowState() & ~Qt.WindowState.WindowMinimized)
    window.show()
    window.raise_()
    window.activateWindow()


def _process_start() -> float:
    import psutil

    return psutil.Process().create_time()


def _startup_probe(app, out: Path, bridge, store) -> int:
    """For bench/: record when the window was first painted and the idle RSS, then quit.

    No model is loaded, so the figures are the window's own.
    """
    import json

    import psutil

    process = psutil.Process()
    figures = {}

    def shown():
        figures["shown_s"] = time.time() - process.create_time()
        QTimer.singleShot(2000, idle)

    def idle():
        figures["idle_rss_mb"] = process.memory_info().rss / 2**20
        out.write_text(json.dumps(figures))
        app.quit()

    QTimer.singleShot(0, shown)
    app.exec()
    bridge.shutdown()
    store.close()
    return 0


def offer_crash_reports(parent) -> None:
    reports = crash.pending_reports()
    if not reports:
        return
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Warning)
    box.setWindowTitle("Hearth closed unexpectedly")
    box.setText("Hearth closed unexpectedly last time. A report was saved in its log folder.")
    box.setInformativeText(str(paths.log_dir()))
    box.setDetailedText("\n\n".join(r.read_text(encoding="utf-8", errors="replace")[-4000:] for r in reports))
    box.exec()
    crash.mark_seen(reports)
