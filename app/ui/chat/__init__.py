"""The chat pane: messages rendered from Markdown, the streaming reply, versions, links,
the composer and the inline editor."""
