"""The main window: its columns, menus and shortcuts, the conversation list, Tab order,
undo, how store problems are shown, and light or dark appearance (View → Appearance)."""
