"""A streamed text chunk made from the bytes around its text (shapes.py, made once per choice)
is the very chunk made whole, whatever the text and the model's name hold."""

from __future__ import annotations

import json

import pytest

from app.serve.shapes import TEXT_MARK, ChatShape, CompletionShape, event

TEXTS = ["", " lighthouse", 'a "quoted" \\ back\\slash', "line\nbreak\ttab\r", "ünïcode \u2028 \u2029 😀",
         "\x00\x1f control", TEXT_MARK, "</script><b>"]
MODELS = ["gemma-3-270m-q4_k_m.gguf", f"odd {TEXT_MARK} name \"q\".gguf"]


def whole(shape, choice: int, text: str) -> bytes:
    """The chunk as `_chunk` makes any chunk: the whole object encoded at once."""
    return event({"id": shape.id, "object": shape.chunk_object, "created": shape.created, "model": shape.model_id,
                  "choices": [shape._text_choice(choice, text, None)]})


@pytest.mark.parametrize("kind", [ChatShape, CompletionShape])
@pytest.mark.parametrize("model", MODELS)
def test_a_text_chunk_is_the_whole_chunks_bytes(kind, model):
    shape = kind(model, include_usage=False)
    for choice in (0, 1):
        shape.start(choice)
        for text in TEXTS:
            made = shape.piece(choice, text)
            assert made == whole(shape, choice, text)
            data = json.loads(made.removeprefix(b"data: "))
            shown = data["choices"][0]["delta"]["content"] if kind is ChatShape else data["choices"][0]["text"]
            assert shown == text and data["choices"][0]["index"] == choice and data["model"] == model


def test_a_text_chunk_is_openais_shape_as_before():
    """The bytes the whole-chunk code wrote before #31, written out, for each shape."""
    chat, completion = ChatShape("m.gguf", include_usage=False), CompletionShape("m.gguf", include_usage=False)
    for shape in (chat, completion):
        shape.id, shape.created = "x-1", 1
        shape.start(0)
    assert chat.piece(0, ' Hi "x"') == (b'data: {"id":"x-1","object":"chat.completion.chunk","created":1,"model":"m.gguf",'
                                       b'"choices":[{"index":0,"delta":{"content":" Hi \\"x\\""},"logprobs":null,'
                                       b'"finish_reason":null}]}\n\n')
    assert completion.piece(0, " Hi") == (b'data: {"id":"x-1","object":"text_completion","created":1,"model":"m.gguf",'
                                         b'"choices":[{"index":0,"text":" Hi","logprobs":null,"finish_reason":null}]}\n\n')


def test_with_logprobs_a_text_chunk_carries_them():
    from app.engine.logprobs import TokenLogprob

    token = TokenLogprob("Hi", -0.25, b"Hi", ())
    chat = ChatShape("m.gguf", include_usage=False, logprobs=True)
    chat.start(0)
    data = json.loads(chat.piece(0, "Hi", [token]).removeprefix(b"data: "))
    assert data["choices"][0]["logprobs"]["content"][0]["token"] == "Hi"
    completion = CompletionShape("m.gguf", include_usage=False, logprobs=True)
    completion.start(0)
    data = json.loads(completion.piece(0, "Hi", [token]).removeprefix(b"data: "))
    assert data["choices"][0]["text"] == "Hi" and data["choices"][0]["logprobs"]["tokens"] == ["Hi"]
