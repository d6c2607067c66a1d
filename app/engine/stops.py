"""Stop strings: end a reply when the user's stop text appears, without ever showing it.

Text arrives in token-sized pieces, and a stop string can straddle two of them, so the
matcher holds back any tail of the output that could still grow into a stop string and
releases it once it can't.
"""

from __future__ import annotations


class StopStringMatcher:
    def __init__(self, stops: tuple[str, ...] = ()):
        self._stops = tuple(s for s in stops if s)
        self._held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Add text; return (text safe to show now, whether a stop string was reached)."""
        if not self._stops:
            return text, False
        buffer = self._held + text
        cut = min((i for i in (buffer.find(s) for s in self._stops) if i >= 0), default=-1)
        if cut >= 0:
            self._held = ""
            return buffer[:cut], True
        keep = self._longest_partial_stop(buffer)
        self._held = buffer[len(buffer) - keep:] if keep else ""
        return buffer[: len(buffer) - keep], False

    def flush(self, text: str = "") -> str:
        """The reply ended for another reason: release what was held back."""
        shown, stopped = self.feed(text)
        if stopped:
            return shown
        held, self._held = self._held, ""
        return shown + held

    def _longest_partial_stop(self, buffer: str) -> int:
        """Length of the longest suffix of `buffer` that is a proper prefix of a stop string."""
        best = 0
        for stop in self._stops:
            for length in range(min(len(stop) - 1, len(buffer)), best, -1):
                if buffer.endswith(stop[:length]):
                    best = length
                    break
        return best
