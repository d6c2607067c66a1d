"""The chat pane's colours, derived from the widget palette so the pane follows the system
appearance, with links kept readable on any background."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFontDatabase, QPalette

from ..widgets.colors import contrast, error_color, mix
from .markdown_render import RenderTheme


@dataclass(frozen=True)
class ChatTheme:
    """Colours derived from the widget palette, so the pane follows the system appearance."""

    muted: QColor
    link: QColor
    bubble: QColor
    render: RenderTheme
    error: QColor  # a tool's error result (tool_calls/stored.py), 4.5:1 on the page like the rest

    @classmethod
    def from_palette(cls, palette: QPalette) -> "ChatTheme":
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        link = palette.color(QPalette.ColorRole.Link)
        # A palette may keep Qt's default blue link on a dark base: move it towards the text
        # colour until it reads (WCAG's 4.5:1 for body text).
        for _ in range(4):
            if contrast(link, base) >= 4.5:
                break
            link = mix(link, text, 0.3)
        # Muted, yet above WCAG's 4.5:1 on the page, in the user's bubble and on inline code
        # (5.2:1 or more in both of Hearth's palettes; 0.45 gave 4.0:1 in the bubble).
        muted = mix(text, base, 0.38)
        return cls(
            muted=muted,
            link=link,
            bubble=mix(base, palette.color(QPalette.ColorRole.Highlight), 0.12),
            render=RenderTheme(
                dark=base.lightness() < 128,
                text=text.name(),
                muted=muted.name(),
                link=link.name(),
                inline_code_background=mix(base, text, 0.08).name(),
                rule=mix(base, text, 0.3).name(),
                mono_family=QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family(),
            ),
            error=error_color(palette),
        )
