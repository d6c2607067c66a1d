"""The context meter's estimate between the engine's counts (conversation/context_use.py): an
attached image counts as the tokens a projector typically makes of it, not as nothing."""

from __future__ import annotations

from app.conversation.context_use import CHARS_PER_TOKEN, IMAGE_TOKENS, estimate_prompt
from app.images.image import Image

PICTURE = Image(b"\x89PNG stand-in bytes: only the count of images is read", "image/png", 2, 2)


def test_an_image_counts_in_the_estimate_before_anything_was_measured():
    question = {"role": "user", "content": "x" * (3 * CHARS_PER_TOKEN)}
    assert estimate_prompt([question], None) == 3
    assert estimate_prompt([{**question, "images": (PICTURE, PICTURE)}], None) == 3 + 2 * IMAGE_TOKENS


def test_an_image_sent_after_the_last_count_adds_to_it():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
               {"role": "user", "content": "", "images": (PICTURE,)}]
    assert estimate_prompt(history, 40) == 40 + IMAGE_TOKENS
