"""The chat pane's own colours (ui/theme.py: muted labels and notes, links, the user's bubble)
reach WCAG's 4.5:1 on the backgrounds they are drawn on, in both of Hearth's palettes."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QPalette

from app.ui.chat.theme import ChatTheme
from app.ui.widgets.colors import contrast
from app.ui.window import appearance

WCAG_TEXT = 4.5


@pytest.mark.parametrize("name, palette", [("light", appearance.light_palette), ("dark", appearance.dark_palette)])
def test_chat_text_reaches_4_5_to_1(qapp, name, palette):
    palette = palette()
    theme = ChatTheme.from_palette(palette)
    base, text = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)
    pairs = {
        "muted on the page": (theme.muted, base), "muted in the user's bubble": (theme.muted, theme.bubble),
        "links on the page": (theme.link, base), "links in the user's bubble": (theme.link, theme.bubble),
        "text in the user's bubble": (text, theme.bubble),
    }
    faint = [f"{what}: {fg.name()} on {bg.name()} is {contrast(fg, bg):.2f}:1"
             for what, (fg, bg) in pairs.items() if contrast(fg, bg) < WCAG_TEXT]
    assert not faint, f"{name}:\n" + "\n".join(faint)
