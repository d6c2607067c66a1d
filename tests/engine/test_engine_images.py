"""Images through the real Engine (#30): a tiny real vision pair (a tiny language model and a
gemma3-type projector with random weights, tests/support/model_files/tiny_vision.py), run by
llama.cpp and libmtmd. The words it writes are noise; what is checked is where the image goes,
what is evaluated, and what is reused.

- the image's positions are evaluated at their place: the prompt grows by exactly what libmtmd
  makes of the image (the projector's image tokens and its wrapping text);
- two different images give different logits for the first reply token;
- a second turn reuses the cache: the image is not encoded again, only the new turn evaluated;
- a conversation reopened by another Engine (a restart) restores its saved state;
- the same, through the engine's own process (images cross the socket);
- a model without a projector refuses images before its first token, with words.
"""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image as PilImage
from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector
from support.reply_events import collect

from app.engine.backend import closing_reply
from app.engine.gguf.modelfile import ModelFileError
from app.engine.kv.cache import StateCache
from app.engine.llama.generator import Engine
from app.engine.options import LoadOptions
from app.engine.process.backend import ProcessBackend
from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats
from app.images.image import Image, ImageError

GREEDY = SamplingParams(temperature=0.0, max_tokens=4, seed=1, draft="none")
CONVERSATION = 5


def png(colour: tuple[int, int, int], size=(40, 30), stripe: tuple[int, int, int] | None = None) -> Image:
    picture = PilImage.new("RGB", size, colour)
    if stripe is not None:
        for x in range(size[0]):
            picture.putpixel((x, size[1] // 2), stripe)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return Image(buffer.getvalue(), "image/png", *size)


RED, BLUE = png((200, 30, 30)), png((20, 40, 220), stripe=(255, 255, 0))


def asking(image: Image | None, question: str = "What is in this picture?") -> list[dict]:
    message = {"role": "user", "content": question}
    if image is not None:
        message["images"] = (image,)
    return [message]


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


@pytest.fixture(scope="module")
def engine(pair):
    opened = Engine(pair.model, LoadOptions(n_ctx=512, mmproj=str(pair.projector)))
    yield opened
    opened.close()


def answer(engine, messages, conversation_id=None, logprobs=None):
    events = list(_events(engine.stream(messages, GREEDY, conversation_id=conversation_id, logprobs=logprobs)))
    stats = events[-1]
    assert isinstance(stats, ReplyStats) and stats.error is None, stats
    return events, stats


def _events(stream):
    with closing_reply(stream) as events:
        yield from events


def test_the_engine_says_it_reads_images(engine, pair):
    described = engine.describe()
    assert described.projector == pair.projector and described.reads_images


def test_an_image_adds_its_positions_to_the_prompt_at_its_place(engine, pair):
    _, without = answer(engine, asking(None))
    _, with_image = answer(engine, asking(RED))
    entries = engine._vision.entries(RED)
    assert entries.count(min(entries)) == pair.image_tokens  # one run, as long as the projector's tokens
    assert with_image.prompt_tokens - without.prompt_tokens == len(entries) + 1  # and the line after it
    prompt = engine.cached_tokens[:with_image.prompt_tokens]
    start = prompt.index(min(entries)) - entries.index(min(entries))
    assert prompt[start:start + len(entries)] == entries  # the wrapping text and the run, in one place


def test_two_different_images_give_different_logits(engine):
    def first_token_logprobs(image):
        events, _ = answer(engine, asking(image), logprobs=3)
        first = next(event for event in events if not isinstance(event, (str, ReplyStats)))
        return [(alternative.token, round(alternative.logprob, 4)) for alternative in first.top]

    red, blue, red_again = first_token_logprobs(RED), first_token_logprobs(BLUE), first_token_logprobs(RED)
    assert red == red_again  # the same image, evaluated again, gives the same distribution
    assert red != blue


def test_a_second_turn_reuses_the_image_already_in_the_cache(engine, pair):
    first = asking(png((30, 160, 60)), "Describe this one.")  # an image no other test sends
    text, stats = answer(engine, first)
    assert engine._vision.encode_seconds, "the image was encoded for the first turn"
    assert stats.evaluated_prompt_tokens > pair.image_tokens
    follow_up = first + [{"role": "assistant", "content": _text(text)}, {"role": "user", "content": "And now?"}]
    _, second = answer(engine, follow_up)
    assert engine._vision.encode_seconds == [], "the image was encoded again"
    prompt = engine.cached_tokens[:second.prompt_tokens]
    image_end = max(i for i, token in enumerate(prompt) if token < 0) + 1
    reused = second.prompt_tokens - second.evaluated_prompt_tokens
    assert reused >= stats.prompt_tokens > image_end, (second, stats)  # the whole first prompt, image and all


def test_a_reopened_conversation_restores_its_state_with_its_image(pair, tmp_path):
    states = StateCache(tmp_path)
    options = LoadOptions(n_ctx=512, mmproj=str(pair.projector))
    first = Engine(pair.model, options, states=states)
    try:
        text, cold = answer(first, asking(BLUE), CONVERSATION)
    finally:
        first.close()  # keeps the conversation's state, as quitting does
    again = Engine(pair.model, options, states=StateCache(tmp_path))
    try:
        follow_up = asking(BLUE) + [{"role": "assistant", "content": _text(text)},
                                    {"role": "user", "content": "Tell me more."}]
        _, warm = answer(again, follow_up, CONVERSATION)
        assert again._vision.encode_seconds == [], "the restored image was encoded again"
    finally:
        again.close()
    assert warm.evaluated_prompt_tokens < cold.evaluated_prompt_tokens / 2, (warm, cold)


def test_images_cross_to_the_engines_process(pair):
    options = LoadOptions(n_ctx=512, mmproj=str(pair.projector))
    backend = ProcessBackend.open(pair.model, options)
    try:
        assert backend.describe().reads_images
        pieces, stats = collect(backend.stream(asking(RED), GREEDY, threading.Event()))
        in_process = Engine(pair.model, options)
        try:
            expected, expected_stats = collect(in_process.stream(asking(RED), GREEDY))
        finally:
            in_process.close()
    finally:
        backend.close()
    assert (pieces, stats.prompt_tokens) == (expected, expected_stats.prompt_tokens)


def test_a_model_without_a_projector_refuses_images_before_its_first_token(pair):
    engine = Engine(pair.model, LoadOptions(n_ctx=512))
    try:
        assert not engine.describe().reads_images
        with pytest.raises(ImageError, match="cannot read images: no projector"):
            next(iter(engine.stream(asking(RED), GREEDY)))
        _, stats = answer(engine, asking(None))  # and text still goes
    finally:
        engine.close()


def test_text_that_spells_a_placeholder_stays_text(engine):
    from app.engine.image_prompt import placeholder

    _, plain = answer(engine, asking(None, "look: " + placeholder(RED.digest)))
    assert not any(token < 0 for token in engine.cached_tokens[:plain.prompt_tokens])


def test_a_projector_for_another_model_is_refused_when_loading(pair, tmp_path):
    wrong = write_tiny_projector(tmp_path / "mmproj-wrong.gguf", projection_dim=96)
    with pytest.raises((ModelFileError, ImageError)):
        Engine(pair.model, LoadOptions(n_ctx=512, mmproj=str(wrong)))


def _text(events) -> str:
    return "".join(event for event in events if isinstance(event, str))
