"""Dialogs: Settings (saved states, folders) and Serve (the local OpenAI-compatible server)."""
