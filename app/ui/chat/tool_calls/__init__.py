"""The chat pane's share of tool calls: the live cards laid under a reply while the agent loop
runs (live.py), and the calls and results a conversation keeps, written into the transcript
(stored.py). The card itself is ui/chat/tool_card.py."""
