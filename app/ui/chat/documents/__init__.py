"""The chat pane's share of chat with documents (#28): the documents button beside the message
box (picker.py), which chooses the collections a conversation's questions are answered from.
(ui/chat/document.py is something else: the transcript's rich-text document.)"""
