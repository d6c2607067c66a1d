"""Widgets only. Nothing in here imports llama_cpp; widgets reach the engine through the owner
objects (app.owners.chat_session, app.owners.model_session, app.owners.downloads), which reach it
through app.owners.bridge.

    app/         the process around the window: start, single instance, self-test, signals
    window/      the main window, its columns, menus, conversation list and undo
    chat/        the chat pane: messages, streaming, the composer, Markdown
    models/      choosing, finding and getting models; remote servers
    parameters/  the side panel: sampling and load settings, the template editor
    dialogs/     Settings and Serve
    widgets/     small parts every view uses: colours, focus ring, tooltips, announcements
"""
