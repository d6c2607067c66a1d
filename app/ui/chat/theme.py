"""The chat pane's colours, derived from the widget palette so the pane follows the system
appearance, with links kept readable on any background."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFontDatabase, QPalette

from .markdown_render import RenderTheme


def _mix(a: QColor, b: QColor, amount: float) -> QColor:
    """a moved `amount` of the way towards b."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * amount,
        a.greenF() + (b.greenF() - a.greenF()) * amount,
        a.blueF() + (b.blueF() - a.blueF()) * amount,
    )


def _contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio, from 1 (none) to 21 (black on white)."""

    def luminance(c: QColor) -> float:
        def linear(v: float) -> float:
            return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@dataclass(frozen=True)
class ChatTheme:
    """Colours derived from the widget palette, so the pane follows the system appearance."""

    muted: QColor
    link: QColor
    bubble: QColor
    render: RenderTheme

    @classmethod
    def from_palette(cls, palette: QPalette) -> "ChatTheme":
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        link = palette.color(QPalette.ColorRole.Link)
        # A palette may keep Qt's default blue link on a dark base: move it towards the text
        # colour until it reads (WCAG's 4.5:1 for body text).
        for _ in range(4):
            if _contrast(link, base) >= 4.5:
                break
            link = _mix(link, text, 0.3)
        # Muted, yet above WCAG's 4.5:1 on the page, in the user's bubble and on inline code
        # (5.2:1 or more in both of Hearth's palettes; 0.45 gave 4.0:1 in the bubble).
        muted = _mix(text, base, 0.38)
        return cls(
            muted=muted,
            link=link,
            bubble=_mix(base, palette.color(QPalette.ColorRole.Highlight), 0.12),
            render=RenderTheme(
                dark=base.lightness() < 128,
                text=text.name(),
                muted=muted.name(),
                link=link.name(),
                inline_code_background=_mix(base, text, 0.08).name(),
                rule=_mix(base, text, 0.3).name(),
                mono_family=QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family(),
            ),
        )
