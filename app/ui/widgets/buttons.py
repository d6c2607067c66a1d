"""A push button that says what it does: its accessible name from its text (no mnemonic "&",
no trailing "…"), its description also its tooltip, and never the dialog's default button (Enter
in a dialog's lists and fields must not press it). The Settings pages make all theirs this way."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton, QWidget


def described_button(text: str, description: str, parent: QWidget | None = None) -> QPushButton:
    button = QPushButton(text, parent)
    button.setAccessibleName(text.replace("&", "").removesuffix("…"))
    button.setAccessibleDescription(description)
    button.setToolTip(description)
    button.setAutoDefault(False)
    return button
