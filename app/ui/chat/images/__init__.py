"""Images in the chat: those attached to the message being written (chips above the message box,
attachments.py) and those a sent message carries (thumbnails in its bubble, in_transcript.py)."""
