"""Stop strings as one line of text: the parameters panel's "Stop at" field.

Several stop strings share one field, separated by commas, so a comma, a line break, a tab, a
backslash or a space at either end of a stop string needs an escape to be written at all.
"""

from __future__ import annotations


def format_stop_strings(stops: tuple[str, ...]) -> str:
    """The stop-string field's text: comma-separated, with backslash escapes (see parse)."""
    return ", ".join(_escape_stop(stop) for stop in stops)


def _escape_stop(stop: str) -> str:
    text = stop.replace("\\", "\\\\").replace(",", "\\,").replace("\n", "\\n").replace("\t", "\\t")
    # Spaces at the ends would be trimmed as separator padding, so they are spelled \s.
    core = text.strip(" ")
    lead, trail = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
    return "\\s" * lead + core + "\\s" * trail if core else "\\s" * len(text)


def parse_stop_strings(text: str) -> tuple[str, ...]:
    """Split on commas; `\\n` is a line break, `\\t` a tab, `\\s` a space, `\\,` a comma,
    `\\\\` a backslash. Unescaped spaces around each item are trimmed; empty items dropped."""
    escapes = {"n": "\n", "t": "\t", "s": " ", ",": ",", "\\": "\\"}
    items: list[list[tuple[str, bool]]] = [[]]  # characters, with whether each was escaped
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in escapes:
            items[-1].append((escapes[text[index + 1]], True))
            index += 2
            continue
        if char == ",":
            items.append([])
        else:
            items[-1].append((char, False))
        index += 1
    stops = []
    for chars in items:
        while chars and not chars[0][1] and chars[0][0].isspace():
            chars.pop(0)
        while chars and not chars[-1][1] and chars[-1][0].isspace():
            chars.pop()
        if chars:
            stops.append("".join(char for char, _ in chars))
    return tuple(stops)
