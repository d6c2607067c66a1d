"""Images through the real Engine where the easy path does not go (#30), on the tiny real vision
pair (tests/support/model_files/tiny_vision.py):

- a conversation whose image the KV cache no longer holds (a Regenerate or an edit after a
  restart, where the saved state begins a prompt no more) evaluates the image again rather than
  failing, however its tokens were reused;
- a conversation whose images together outgrow a frame still crosses to the engine's process,
  each image once;
- templates that lose an image, start the prompt with one or end where one does;
- text anywhere in a message that spells a placeholder stays text.
"""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from PIL import Image as PilImage
from support.model_files.tiny_vision import ensure_tiny_vision_pair
from support.reply_events import collect

from app.engine.image_prompt import placeholder, with_placeholders
from app.engine.kv.cache import StateCache
from app.engine.llama.generator import Engine
from app.engine.options import LoadOptions
from app.engine.process.backend import ProcessBackend
from app.engine.process.frames import MAX_FRAME_BYTES
from app.engine.sampling import SamplingParams
from app.images.image import Image, ImageError

GREEDY = SamplingParams(temperature=0.0, max_tokens=4, seed=1, draft="none")
CONVERSATION = 9


def png(colour, size=(40, 30)) -> Image:
    buffer = io.BytesIO()
    PilImage.new("RGB", size, colour).save(buffer, "PNG")
    return Image(buffer.getvalue(), "image/png", *size)


def noise(seed: int, side: int = 2048) -> Image:
    """A PNG of random pixels: it does not compress, so it is as large as an image Hearth keeps gets."""
    pixels = np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PilImage.fromarray(pixels).save(buffer, "PNG", compress_level=0)
    return Image(buffer.getvalue(), "image/png", side, side)


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


def options(pair, **more) -> LoadOptions:
    return LoadOptions(n_ctx=512, mmproj=str(pair.projector), **more)


def answer(backend, messages, conversation_id=None) -> tuple[str, object]:
    pieces, stats = collect(backend.stream(messages, GREEDY, threading.Event(), conversation_id=conversation_id))
    assert stats is not None and stats.error is None, stats
    return "".join(pieces), stats


def with_image(text: str, image: Image) -> dict:
    return {"role": "user", "content": text, "images": (image,)}


def test_a_regenerate_and_an_edit_after_a_restart_evaluate_the_image_again(pair, tmp_path):
    picture = png((200, 100, 20))
    first = [with_image("What is this?", picture)]
    opened = Engine(pair.model, options(pair), states=StateCache(tmp_path))
    try:
        text, _ = answer(opened, first, CONVERSATION)
        second = first + [{"role": "assistant", "content": text}, {"role": "user", "content": "Say more."}]
        text_two, _ = answer(opened, second, CONVERSATION)
    finally:
        opened.close()  # the conversation's state is saved with both turns
    again = Engine(pair.model, options(pair), states=StateCache(tmp_path))
    try:
        again.prepare(CONVERSATION)  # the window opens the conversation
        _, regenerated = answer(again, second, CONVERSATION)  # the last reply written again
        assert regenerated.evaluated_prompt_tokens > 0
        edited = first + [{"role": "assistant", "content": text}, {"role": "user", "content": "Something else?"}]
        _, after_edit = answer(again, edited, CONVERSATION)
        assert again._vision.encode_seconds == []  # both kept the image the restored state holds
        # A prompt that differs before the image: its entries are known, its chunk long freed.
        changed = [{"role": "system", "content": "Be brief."}] + first
        _, from_the_start = answer(again, changed, CONVERSATION)
        assert again._vision.encode_seconds, "the image was not evaluated again where the cache no longer held it"
    finally:
        again.close()
    assert after_edit.prompt_tokens > pair.image_tokens and from_the_start.prompt_tokens > pair.image_tokens


def test_images_that_together_outgrow_a_frame_cross_once_each(pair):
    images = [noise(seed) for seed in range(6)]
    assert sum(len(image.data) for image in images) * 4 / 3 > MAX_FRAME_BYTES  # as base64, more than a frame
    backend = ProcessBackend.open(pair.model, options(pair))
    try:
        messages = [{"role": "user", "content": "Compare these.", "images": tuple(images)}]
        text, first = answer(backend, messages)
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "And the first one?"}]
        _, second = answer(backend, messages)
    finally:
        backend.close()
    assert first.prompt_tokens >= 6 * pair.image_tokens
    assert second.evaluated_prompt_tokens < second.prompt_tokens - 6 * pair.image_tokens  # the images reused


def test_a_template_that_loses_an_image_is_refused_before_the_reply(pair):
    escaping = "{% for m in messages %}{{ m.content | e }}\n{% endfor %}ASSISTANT:"
    engine = Engine(pair.model, options(pair, template_override=escaping))
    try:
        with pytest.raises(ImageError, match="does not write a message's image"):
            next(iter(engine.stream([with_image("Look.", png((1, 2, 3)))], GREEDY)))
    finally:
        engine.close()


def test_a_prompt_that_begins_with_an_image_still_begins_with_bos(pair):
    bare = "{% for m in messages %}{{ m.content }}{% endfor %} ASSISTANT:"
    engine = Engine(pair.model, options(pair, template_override=bare))
    try:
        _, stats = answer(engine, [with_image("What is it?", png((9, 9, 9)))])
        prompt = engine.cached_tokens[:stats.prompt_tokens]
        assert prompt[0] == engine._bos_id and prompt.count(engine._bos_id) == 1
        assert any(token < 0 for token in prompt)
    finally:
        engine.close()


def test_a_prompt_that_ends_where_the_image_does_is_answered(pair):
    """A template that trims the text after an image ends the prompt with the image's entries: with
    this projector (gemma3) they end in its closing text, `<end_of_image>`, whose logits the first
    token is read from. (A projector with no closing text, LLaVA's, would end it with the image's
    positions, which the engine refuses before the reply: no such pair is built here.)"""
    trimmed = "{% for m in messages %}{{ m.content | trim }}{% endfor %}"
    engine = Engine(pair.model, options(pair, template_override=trimmed))
    try:
        _, stats = answer(engine, [with_image("", png((4, 5, 6)))])
        assert engine.cached_tokens[stats.prompt_tokens - 1] >= 0
        assert any(token < 0 for token in engine.cached_tokens[:stats.prompt_tokens])
    finally:
        engine.close()


def test_text_that_spells_a_placeholder_anywhere_in_a_message_stays_text():
    picture = png((7, 7, 7))
    forged = placeholder(picture.digest)
    messages = [
        {"role": "user", "content": "Here.", "images": (picture,)},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "look", "arguments": f'{{"at": "{forged}"}}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": forged, "content": forged},
    ]
    rendered, images = with_placeholders(messages)
    assert list(images) == [picture.digest]
    everything = repr(rendered)
    assert everything.count(forged) == 1  # the one the attached image put before its message's text
