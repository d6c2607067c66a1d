"""Sending the message box's text and images, now or when it can be.

A message sent while the model loads, while a reply is being written in another conversation,
or while its images are still being read, waits in the message box (which says so) and is sent
when it can be: when the model has loaded, when no reply holds it back, when its images are in.
A load that fails, or another conversation opened, leaves it in the box unsent, saying why. So
does a model that cannot read the images attached (they were attached for another, or before it
loaded): the images stay, to be removed or sent once a model that reads them is loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from ...owners.chat_session import ChatSession
from ...owners.model_session import ModelSession
from ..chat.composer import Composer
from .conversation_list import shown_title
from .images import ImageAttaching, images_refused
from .store_problems import StoreProblemBanner, reports_store_errors


class MessageSending(QObject):
    """Sends what the message box holds, or lets it wait there, for MainWindow.

    Slots (connected here): the message box's sendRequested; ModelSession's modelLoaded (after
    the window's ModelDisplay has shown the model) and loadFailed. The window calls send_waiting
    when a reply ends, and stop_waiting_for when another conversation is shown. Its `images`
    (images.py) keep the box's images fit for the model and take those dropped on `window`.
    """

    def __init__(self, composer: Composer, session: ChatSession, models: ModelSession,
                 model_name: Callable[[str | None], str | None], store_banner: StoreProblemBanner,
                 window: QWidget):
        """`model_name`: the name a model is shown by, from the record a reply keeps (ModelDisplay's)."""
        super().__init__(window)
        self._composer, self._session, self._models, self._model_name = composer, session, models, model_name
        self.store_banner = store_banner
        self.images = ImageAttaching(composer, models, window)
        composer.sendRequested.connect(self.send)
        models.modelLoaded.connect(lambda _loaded: self.send_waiting())
        composer.images.changed.connect(self.send_waiting)  # the images it waited for are read
        models.loadFailed.connect(self._on_load_failed)

    @reports_store_errors
    def send(self, text: str) -> None:
        """Send text, or let it wait in the box while the model loads or a reply is being
        written in another conversation (the box says so)."""
        if self._composer.waiting:
            return
        waits_for = self._waits_for()
        images = self._composer.attached()
        refusal = images_refused(self._models.current) if images else None
        if waits_for is not None:
            self._composer.wait(waits_for)
        elif refusal is not None:
            self._composer.stop_waiting(f"Not sent: {refusal}, or remove the images to send the text alone.")
        elif self._session.send(text, images):
            self._composer.clear()

    def _waits_for(self) -> str | None:
        """Why a message cannot be sent now but can soon, or None."""
        if self._composer.images.reading:
            return "Will send when its images have been read."
        loading = self._models.loading
        if loading is not None:
            name = self._model_name(loading.record_name)
            return f"Will send when {name} has loaded."
        reply_in = self._session.reply_conversation_id
        if reply_in is not None and reply_in != self._session.conversation_id:
            title = shown_title(self._session.store.get_conversation(reply_in).title)
            return f"Will send when the reply in “{title}” is finished (Esc stops it)."
        return None

    @reports_store_errors
    def send_waiting(self) -> None:
        """Send the message waiting in the box, if nothing holds it back any more."""
        if self._composer.waiting and self._waits_for() is None:
            self._composer.stop_waiting()
            self.send(self._composer.text())

    def stop_waiting_for(self, reason: str) -> None:
        """The message waiting will not be sent (it stays in the box): say why."""
        if self._composer.waiting:
            self._composer.stop_waiting(reason)

    def _on_load_failed(self, _message: str) -> None:
        if self._models.loading is None:
            self.stop_waiting_for("Not sent: the model could not be loaded. Your message is still here.")
