"""Where a click on a link in the chat pane goes.

Qt never follows a link here. The pane's own actions (under messages and code blocks, in the
welcome) use the private `hearth:` scheme (message_footer.action_href) and are told apart here,
each as a signal with its argument; web links go to the window, which asks before opening
anything (model text is untrusted); any other scheme is ignored, the renderer never makes one.
An action whose argument is not a number is ignored; whether the number names something (a
message handed over, a prompt shown) is for the part that answers it to say.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtWidgets import QTextBrowser

from .message_footer import ACTION_SCHEME


class LinkRouter(QObject):
    """Turns the links clicked in `browser` into signals.

    Signals:
        webLinkClicked(QUrl): an http(s) link in a message.
        codeCopyClicked(str): Copy over a code block; the href its code is kept under.
        messageCopyClicked(int): Copy under the message at this index of those handed over.
        editClicked(int): Edit under the user message with this id.
        regenerateClicked(): Regenerate under the last reply.
        versionStepClicked(int, int): ‹ (-1) or › (+1) under the message with this id.
        branchClicked(int): Branch under the message with this id.
        deleteVersionClicked(int): Delete under the message with this id.
        showEarlierClicked(): "Show earlier messages".
        getModelsClicked(): the welcome's "Get models".
        promptClicked(int): the welcome's example prompt at this index.
        resultExpandClicked(int): "Show all" (or "Show less") under the tool result with this id.
        sourceClicked(int, int): source n (1-based) of the question with this id, under its reply.
        imageClicked(int, int): image n (1-based) of the message with this id.
    """

    webLinkClicked = Signal(QUrl)
    codeCopyClicked = Signal(str)
    messageCopyClicked = Signal(int)
    editClicked = Signal(int)
    regenerateClicked = Signal()
    versionStepClicked = Signal(int, int)
    branchClicked = Signal(int)
    deleteVersionClicked = Signal(int)
    showEarlierClicked = Signal()
    getModelsClicked = Signal()
    promptClicked = Signal(int)
    resultExpandClicked = Signal(int)
    sourceClicked = Signal(int, int)
    imageClicked = Signal(int, int)

    def __init__(self, browser: QTextBrowser) -> None:
        super().__init__(browser)
        browser.anchorClicked.connect(self._clicked)

    def _clicked(self, url: QUrl) -> None:
        if url.scheme() == ACTION_SCHEME:
            self._run_action(url)
        elif url.scheme() in ("http", "https"):
            self.webLinkClicked.emit(url)

    def _run_action(self, url: QUrl) -> None:
        action, _, argument = url.path().partition("/")
        if action == "copy-code":
            self.codeCopyClicked.emit(url.toString())
        elif action == "regenerate":
            self.regenerateClicked.emit()
        elif action == "show-earlier":
            self.showEarlierClicked.emit()
        elif action == "get-models":
            self.getModelsClicked.emit()
        elif action in ("open-source", "open-image"):
            message, _, number = argument.partition("-")
            if message.isdigit() and number.isdigit():
                signal = self.sourceClicked if action == "open-source" else self.imageClicked
                signal.emit(int(message), int(number))
        elif argument.isdigit():
            self._run_numbered(action, int(argument))

    def _run_numbered(self, action: str, number: int) -> None:
        if action == "copy-message":
            self.messageCopyClicked.emit(number)
        elif action == "edit":
            self.editClicked.emit(number)
        elif action in ("previous-version", "next-version"):
            self.versionStepClicked.emit(number, -1 if action == "previous-version" else 1)
        elif action == "branch":
            self.branchClicked.emit(number)
        elif action == "delete-version":
            self.deleteVersionClicked.emit(number)
        elif action == "prompt":
            self.promptClicked.emit(number)
        elif action == "expand-result":
            self.resultExpandClicked.emit(number)
