"""The parameters panel: sampling values and where each comes from, load settings, stop
strings and the chat template editor."""
