"""Hearth's sampling settings as the body of an OpenAI chat-completions request.

OpenAI's API has fields for some of Hearth's parameters; llama.cpp's server (and llama-cpp-
python's, and vLLM for top_k and min_p) also reads a few more under llama.cpp's names. Hearth
sends both kinds. Which extension a server obeys cannot be asked: a server that does not know
a field mostly ignores it in silence, and a strict one (OpenAI's own) refuses the request with
a 400 that names it. The backend then sends the request again without the extensions and
remembers that this server ignores them (RemoteBackend.ignored_fields); the parameters panel
describes the rest from these lists.
"""

from __future__ import annotations

from ..sampling import SamplingParams

# Sent under OpenAI's own names, which every compatible server reads.
REMOTE_STANDARD_FIELDS: tuple[str, ...] = (
    "temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty", "frequency_penalty", "logit_bias",
)
# Sent under llama.cpp's names: llama.cpp's servers obey all three, vLLM top_k and min_p (its
# repeat penalty is called repetition_penalty), other servers may ignore them.
REMOTE_EXTENSION_FIELDS: tuple[str, ...] = ("top_k", "min_p", "repeat_penalty")
# Never sent: no OpenAI-compatible chat endpoint reads a repeat-penalty window.
REMOTE_UNSENT_FIELDS: tuple[str, ...] = ("repeat_last_n",)


def chat_body(model_id: str, messages: list[dict], params: SamplingParams, seed: int,
              extensions: bool = True) -> dict:
    """The JSON body of a streamed `POST /chat/completions` for `messages` ({"role", "content"};
    the server applies its own chat template). `seed` is the reply's resolved seed, sent so the
    reply's record says which seed it was."""
    body = {
        "model": model_id,
        "messages": [{"role": message["role"], "content": message["content"]} for message in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
        "seed": seed,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
    }
    if params.stop:
        body["stop"] = list(params.stop)
    if params.logit_bias:
        body["logit_bias"] = {str(token): bias for token, bias in params.logit_bias.items()}
    if extensions:
        body.update({name: getattr(params, name) for name in REMOTE_EXTENSION_FIELDS})
    return body


def names_an_extension(message: str | None) -> bool:
    """Whether a server's refusal is about one of the extension fields (OpenAI: "Unrecognized
    request argument supplied: top_k")."""
    return bool(message) and any(name in message for name in REMOTE_EXTENSION_FIELDS)
