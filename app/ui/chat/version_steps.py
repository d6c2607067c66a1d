"""‹ n/m › under a message: stepping to another version without losing one's place.

The window answers a step by showing the conversation again on the other branch (set_messages,
called while versionStepped is being answered). The message stepped to then stands where the
one stepped from stood on screen instead of the pane jumping to the bottom, the keyboard stays
on its arrow (or the other one, at an end), and a screen reader is told which version it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from ..widgets.announce import announce
from .browser import MESSAGE_TOP_MARGIN_PX, ChatBrowser
from .document import MESSAGE_START, find_block
from .link_focus import LinkFocus
from .message_footer import action_href, version_words
from .message_view import MessageView
from .paging import Pages


@dataclass(frozen=True)
class VersionStep:
    """A version step under way: where its message stood, to find the message that stands
    there once the window has shown the other branch."""

    first: bool  # it was the conversation's first message
    after: int | None  # else the id of the message before it (None: that one was not handed over)
    step: int
    label_y: float | None  # its top in the viewport, None if it was not rendered
    keyboard: bool  # the keyboard was on its arrow: it stays on the arrow

    def index_in(self, messages: list[MessageView]) -> int | None:
        """Where the message that took its place is among `messages`, or None if unknown."""
        if self.first:
            return 0 if messages else None
        index = next((i for i, m in enumerate(messages) if self.after is not None and m.id == self.after), None)
        return index + 1 if index is not None and index + 1 < len(messages) else None


class VersionSteps(QObject):
    """Asks for another version of a message of `pages` shown in `browser`, and keeps its
    place once it is shown.

    Signals:
        versionStepped(int, int): ‹ (-1) or › (+1) under the message with this id: the window
            shows the other version with set_messages while this is answered, and the pane
            asks `stepped_index` where it is, then `settle`s it.
    """

    versionStepped = Signal(int, int)

    def __init__(self, browser: ChatBrowser, pages: Pages, link_focus: LinkFocus) -> None:
        super().__init__(browser)
        self._browser = browser
        self._pages = pages
        self._link_focus = link_focus
        self._stepping: VersionStep | None = None  # while versionStepped is being answered

    def step(self, message_id: int, step: int) -> None:
        """‹ or › under a message: ask the window for the other version, remembering where the
        message stood so that set_messages (called while the signal is answered) keeps it there."""
        index = self._pages.index_of(message_id)
        if index is None:
            return
        messages = self._pages.messages
        first = index == 0 and not self._pages.earlier
        after = messages[index - 1].id if index else None
        label = find_block(self._browser.document(), MESSAGE_START, message_id)
        label_y = self._browser.message_top(label) - self._browser.verticalScrollBar().value() if label.isValid() else None
        keyboard = self._link_focus.marked_href() in (action_href("previous-version", message_id),
                                                      action_href("next-version", message_id))
        self._stepping = VersionStep(first, after, step, label_y, keyboard and self._browser.hasFocus())
        try:
            self.versionStepped.emit(message_id, step)
        finally:
            self._stepping = None

    def stepped_index(self) -> int | None:
        """While a step is answered: where the message stepped to is among the messages
        handed over; else (or if it is not among them) None."""
        return self._stepping.index_in(self._pages.messages) if self._stepping is not None else None

    def settle(self, index: int) -> None:
        """The other version is shown, as message `index`: keep it where the one stepped from
        stood, the keyboard on the same arrow (or the other, at an end), and say which it is."""
        step = self._stepping
        message = self._pages.messages[index]
        label = find_block(self._browser.document(), MESSAGE_START, message.id)
        if label.isValid():
            y = step.label_y if step.label_y is not None and step.label_y > 0 else MESSAGE_TOP_MARGIN_PX
            self._browser.verticalScrollBar().setValue(int(self._browser.message_top(label) - y))
            if step.keyboard:
                arrows = ["previous-version", "next-version"]
                if step.step > 0:
                    arrows.reverse()  # the arrow it was on, else (at an end) the other one
                if not self._link_focus.mark(action_href(arrows[0], message.id), label.position()):
                    self._link_focus.mark(action_href(arrows[1], message.id), label.position())
        announce(self._browser, version_words(message))
