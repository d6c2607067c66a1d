"""Log-probabilities of a reply's tokens, as a Backend reports them when asked
(`Backend.stream(..., logprobs=N)`): each chosen token's, with the N likeliest alternatives.

What is reported is the model's own distribution at each step: the log-softmax of the raw
logits the token was picked from, before logit bias, penalties, truncation (top-k, top-p,
min-p), temperature or a grammar. That is what OpenAI reports, and what a client asking
"how sure was the model" means; the sampler's post-truncation distribution would make every
greedy token's probability 1 and every token outside top-k impossible, which says more about
the settings than about the model. (llama.cpp's server reports post-sampling probabilities by
default, and the model's with `post_sampling_probs: false`.)

A reply's stream yields each TokenLogprob just before the text that token's bytes complete
(text pieces are not one per token: a character split over byte tokens waits for its last
byte, and text that might begin a stop string waits until it cannot). Tokens whose text a
stop string cut off are not reported, as their text is not in the reply; neither is the
end-of-turn token. Asked for nothing, a backend yields none and computes none.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_TOP_LOGPROBS = 20  # alternatives per token: OpenAI's limit, and what anyone reads


class LogprobsUnavailable(ValueError):
    """The backend cannot report log-probabilities (a model on a remote server: Hearth does
    not ask the server for them). Raised before the first piece, like a template error."""


@dataclass(frozen=True)
class Alternative:
    """A token the model could have written at this step, and its log-probability."""

    token: str  # its text; a piece that is not whole UTF-8 as "bytes:\\xe2\\x80" (OpenAI's spelling)
    logprob: float
    piece: bytes  # its exact bytes (a character may take several tokens)


@dataclass(frozen=True)
class TokenLogprob:
    """One token of the reply: its text, log-probability and bytes, and the likeliest
    alternatives at its step, likeliest first (it among them when it is one of them)."""

    token: str
    logprob: float
    piece: bytes
    top: tuple[Alternative, ...] = ()


def token_text(piece: bytes) -> str:
    """A token's text for a client: the piece as UTF-8, or, where it is part of a character
    (a byte token), its bytes spelled out as OpenAI spells them."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{byte:02x}" for byte in piece)
