"""The main window: its columns, menus and shortcuts, the conversation list, Tab order,
undo, and how store problems are shown."""
