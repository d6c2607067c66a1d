"""What the line under a message offers: its version switcher, its actions, and what each
link is called.

Links use the view's private `hearth:` scheme. A link whose text alone would say little to a
screen reader (an arrow) carries a fuller name, shown as its tooltip and announced when the
keyboard reaches it (link_focus).
"""

from __future__ import annotations

from .document import FooterPart
from .message_view import MessageView

ACTION_SCHEME = "hearth"

_BETWEEN_LINKS = "  ·  "
_AFTER_SWITCHER = "\u2003"  # an em space: the switcher stands apart from the actions


def action_href(action: str, argument: int | None = None) -> str:
    """The href of one of the view's own actions, e.g. hearth:branch/12."""
    return f"{ACTION_SCHEME}:{action}" if argument is None else f"{ACTION_SCHEME}:{action}/{argument}"


def version_words(message: MessageView) -> str:
    return f"Version {message.version} of {message.versions}"


def footer_parts(message: MessageView, index: int, regenerate: bool) -> list[FooterPart]:
    """The links (and the version count) under the message at `index` of those handed over.

    Every finished message offers Copy and Branch; a user's message Edit; the last reply
    Regenerate. A message with more than one version offers ‹ n/m › and Delete: deleting the
    only version of a message would leave a question unanswered, or take away every later
    turn at once, where Regenerate or Edit (then Delete of the old version) says what the user
    means without losing a turn.
    """
    parts: list[FooterPart] = []
    stored = message.id is not None
    if stored and message.versions > 1:
        parts += _switcher(message)
        parts.append(FooterPart(_AFTER_SWITCHER))
    actions = [FooterPart("Copy", action_href("copy-message", index), "Copy this message")]
    if stored and message.role == "user":
        actions.append(FooterPart("Edit", action_href("edit", message.id),
                                  "Edit this message: sending it makes a new version, and this one is kept"))
    if regenerate:
        actions.append(FooterPart("Regenerate", action_href("regenerate"),
                                  "Write another reply; this one is kept as a version"))
    if stored:
        actions.append(FooterPart("Branch", action_href("branch", message.id),
                                  "Branch from here: a new conversation with the messages up to this one"))
    if stored and message.versions > 1:
        actions.append(FooterPart("Delete", action_href("delete-version", message.id),
                                  "Delete this version and what follows it (it can be undone)"))
    for i, action in enumerate(actions):
        if i:
            parts.append(FooterPart(_BETWEEN_LINKS))
        parts.append(action)
    return parts


def _switcher(message: MessageView) -> list[FooterPart]:
    """‹ n/m ›: an arrow is only dimmed text where there is no version that way. The space
    beside an arrow belongs to its link, to make it easier to hit."""
    shown = version_words(message)
    previous = FooterPart("‹ ", None, None, large=True)
    if message.version > 1:
        previous = FooterPart("‹ ", action_href("previous-version", message.id),
                              f"Previous version ({shown} is shown)", large=True)
    following = FooterPart(" ›", None, None, large=True)
    if message.version < message.versions:
        following = FooterPart(" ›", action_href("next-version", message.id),
                               f"Next version ({shown} is shown)", large=True)
    count = FooterPart(f"{message.version}/{message.versions}", None, shown)
    return [previous, count, following]
