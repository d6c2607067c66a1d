"""Tokens' log-probabilities as OpenAI's two endpoints write them.

/v1/chat/completions: `{"content": [{token, logprob, bytes, top_logprobs: [{token, logprob,
bytes}]}], "refusal": null}`, whole or per chunk (the tokens of that chunk's text).

/v1/completions (the legacy form): parallel lists `tokens`, `token_logprobs`, `text_offset`
and `top_logprobs` (one {token: logprob} object per token; two alternatives spelled alike
share a key, as they do in OpenAI's). `text_offset` counts characters from the start of the
choice's text along its tokens' bytes (a character split over byte tokens counts where it
ends), continued across a stream's chunks; the first token's word-start space, which the
reply's text drops (SentencePiece), is counted, as the token carries it.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from ..engine.logprobs import Alternative, TokenLogprob


def chat_logprobs(tokens: Sequence[TokenLogprob]) -> dict:
    return {"content": [dict(_entry(t), top_logprobs=[_entry(a) for a in t.top]) for t in tokens], "refusal": None}


def _entry(token: TokenLogprob | Alternative) -> dict:
    return {"token": token.token, "logprob": token.logprob, "bytes": list(token.piece)}


class LegacyOffsets:
    """One choice's legacy logprobs, its text offsets running on from chunk to chunk."""

    def __init__(self):
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def logprobs(self, tokens: Sequence[TokenLogprob]) -> dict:
        offsets = []
        for token in tokens:
            offsets.append(self._offset)
            self._offset += len(self._decoder.decode(token.piece))
        return {"tokens": [t.token for t in tokens], "token_logprobs": [t.logprob for t in tokens],
                "top_logprobs": [{a.token: a.logprob for a in t.top} for t in tokens], "text_offset": offsets}
