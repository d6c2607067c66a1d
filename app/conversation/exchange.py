"""Storing one exchange (the user's message, then the reply as it streams) the same way in the
window and on the command line.

The reply is stored as 'streaming' at once and rewritten every PARTIAL_SAVE_MS while it grows,
so a killed process leaves it as far as it got; the store's recovery marks it cut off on the
next start.
"""

from __future__ import annotations

PARTIAL_SAVE_MS = 500
