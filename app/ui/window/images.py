"""The window's side of images attached to a message: whether the loaded model can read them
(the Attach button off, saying why, when it cannot), and image files or pictures dragged over the
window, which go to the message box wherever they are dropped (a hint over the box says so).

A drag of image files alone is the message box's; one with a folder or another file among them
stays the documents' (documents.py), and a model file's stays the model list's. The drop is
taken by a DropTarget (widgets/drop_hint.py) on the window and the message box, as the
documents' is: a drag bubbles up to the window from whatever is under the pointer when that
does not take it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

from ...engine.types import ModelDescription
from ...owners.model_session import ModelSession
from ..chat.composer import Composer
from ..chat.images.attachments import carries_images, image_files, picture_of
from ..widgets.drop_hint import DropHint, DropTarget

DROP_TEXT = "Drop to attach to your message"
DROP_DESCRIPTION = "Images dropped here go with the message you are writing; they are sent when you send it."


def images_refused(model: ModelDescription | None) -> str | None:
    """Why images cannot go to `model`, in words a user can act on; None when they can, or when
    no model is loaded (the one loaded next may read them, and Send says there is none)."""
    if model is None or model.reads_images:
        return None
    return f"{model.name} cannot read images: load a vision model with its projector (mmproj)"


class ImageAttaching(QObject):
    """Keeps the message box's images fit for the loaded model, and takes images dropped on
    `window`. MessageSending (sending.py) makes it, and asks images_refused before it sends."""

    def __init__(self, composer: Composer, models: ModelSession, window: QWidget) -> None:
        super().__init__(window)
        self._composer, self._models = composer, models
        self.drop_hint = DropHint(composer, DROP_TEXT, DROP_DESCRIPTION, margin=0)
        self._drops = DropTarget(self.drop_hint, carries_images, self._take, (window, composer.edit.viewport()),
                                 self, before_showing=self._say_why_not)
        for changed in (models.modelLoaded, models.descriptionChanged):
            changed.connect(lambda _description: self.follow_model())
        models.modelUnloaded.connect(self.follow_model)
        self.follow_model()

    def follow_model(self) -> None:
        """The Attach button on, or off saying why, for the model loaded now."""
        self._composer.images.set_refusal(images_refused(self._models.current))

    def _take(self, mime) -> None:
        """Attach what was dropped once the drop has returned (the drag's source is not kept
        waiting while intake reads): its files' paths, or a copy of its picture, are kept now,
        since the drag's data goes with it."""
        attachments = self._composer.images
        paths = image_files(mime)
        if paths:
            QTimer.singleShot(0, self, lambda: attachments.attach_files(paths))
        else:
            picture = picture_of(mime).copy()
            QTimer.singleShot(0, self, lambda: attachments.attach_picture(picture))

    def _say_why_not(self) -> None:
        """The hint says why nothing is attached when the model loaded reads no images."""
        refusal = images_refused(self._models.current)
        self.drop_hint.say(refusal or DROP_TEXT, "Nothing is attached." if refusal else DROP_DESCRIPTION)
