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


def test_with_logprobs_a_text_chunk_carries_them():
    from app.engine.logprobs import TokenLogprob

    shape = ChatShape("m.gguf", include_usage=False, logprobs=True)
    shape.start(0)
    data = json.loads(shape.piece(0, "Hi", [TokenLogprob("Hi", -0.25, b"Hi", ())]).removeprefix(b"data: "))
    assert data["choices"][0]["logprobs"]["content"][0]["token"] == "Hi"
