"""Hearth's sampling settings as the body of an OpenAI chat-completions request.

OpenAI's API has fields for some of Hearth's parameters; llama.cpp's server (and llama-cpp-
python's, and vLLM for top_k and min_p) also reads a few more under llama.cpp's names. Hearth
sends both kinds. Which extension a server obeys cannot be asked: a server that does not know
a field mostly ignores it in silence, and a strict one (OpenAI's own) refuses the request with
a 400 that names it. The backend then sends the request again without the extensions and
remembers that this server ignores them (RemoteBackend.ignored_fields); the parameters panel
describes the rest from these lists.

A user's images go as OpenAI's `image_url` content parts with data: URLs; a server whose model
reads none refuses them, and its words are shown as any refusal's.
"""

from __future__ import annotations

import base64

from ...images.image import Image
from ..sampling import SamplingParams
from ..tools.types import PLAIN, ToolUse
from ..tools.wire import tool_use_to_openai

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
              extensions: bool = True, tools: ToolUse = PLAIN) -> dict:
    """The JSON body of a streamed `POST /chat/completions` for `messages` ({"role", "content"},
    with tool calls and results in OpenAI's form; the server applies its own chat template).
    `seed` is the reply's resolved seed, sent so the reply's record says which seed it was.
    `tools` go as OpenAI's fields (engine/tools/wire.py writes them): the server's own model
    holds its calls to their schemas, or does not; the backend checks each call it returns."""
    body = {
        "model": model_id,
        "messages": [_wire_message(message) for message in messages],
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
    body.update(tool_use_to_openai(tools))
    return body


def _wire_message(message: dict) -> dict:
    """A message as OpenAI takes it: its role and content (with images, content parts), an
    assistant's calls, a result's call id; nothing else the house keeps on a message goes out
    (a result's tool `name` is for the templates: OpenAI's tool messages have none, and a
    strict server refuses it)."""
    images = message.get("images")
    wire = {"role": message["role"], "content": _parts(message["content"], images) if images else message["content"]}
    if message.get("tool_calls"):
        wire["tool_calls"] = message["tool_calls"]
    if message["role"] == "tool":
        wire["tool_call_id"] = message["tool_call_id"]
    return wire


def _parts(text: str, images: tuple[Image, ...]) -> list[dict]:
    """A message with images as OpenAI's content parts: each image an `image_url` part holding
    its bytes as a data: URL (a server cannot be asked to fetch what only this machine has),
    before the text, as the local engine places them (engine/image_prompt.py)."""
    parts: list[dict] = [{"type": "image_url", "image_url": {"url": data_url(image)}} for image in images]
    return parts + ([{"type": "text", "text": text}] if text else [])


def data_url(image: Image) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def names_an_extension(message: str | None) -> bool:
    """Whether a server's refusal is about one of the extension fields (OpenAI: "Unrecognized
    request argument supplied: top_k")."""
    return bool(message) and any(name in message for name in REMOTE_EXTENSION_FIELDS)
