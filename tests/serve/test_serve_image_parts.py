"""A request's image parts read while its body is parsed (serve/image_parts.py): where each image
is and the field it came in, for chat's `image_url` parts and the Responses API's `input_image`
parts; and each refusal at this stage, a 400 naming the field and why.

(Reading the images themselves, and the refusals that need the served model, are
test_serve_images.py's.)
"""

from __future__ import annotations

import json

import pytest

from app.engine.sampling import SamplingParams
from app.images.limits import MAX_IMAGES_PER_MESSAGE
from app.serve.errors import ApiError
from app.serve.image_parts import ImageSource
from app.serve.requests import parse_chat
from app.serve.responses import parse_responses

PNG_URL = "data:image/png;base64,iVBORw0KGgo="  # read no further here: intake reads it later


def chat(*messages) -> list[dict]:
    body = json.dumps({"model": "m.gguf", "messages": list(messages)}).encode()
    return parse_chat(body, SamplingParams()).messages


def responses(*items) -> list[dict]:
    body = json.dumps({"model": "m.gguf", "input": list(items)}).encode()
    return parse_responses(body, SamplingParams()).input


def refused(parse, *messages) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse(*messages)
    assert caught.value.status == 400
    return caught.value


def image_part(url=PNG_URL, **extra) -> dict:
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def test_a_users_image_parts_become_its_images_and_its_text_parts_its_text():
    [message] = chat({"role": "user", "content": [
        {"type": "text", "text": "What is in"}, image_part(detail="high"), {"type": "text", "text": "this picture?"},
        {"type": "image_url", "image_url": "https://example.com/b.png"},  # the bare-string form some clients send
    ]})
    assert message == {"role": "user", "content": "What is in\nthis picture?", "images": (
        ImageSource(PNG_URL, "messages[0].content[1].image_url.url"),
        ImageSource("https://example.com/b.png", "messages[0].content[3].image_url"),
    )}


def test_a_message_without_images_has_no_images_key():
    assert chat({"role": "user", "content": [{"type": "text", "text": "Hi"}]}) == [{"role": "user", "content": "Hi"}]
    assert chat({"role": "user", "content": "Hi"}) == [{"role": "user", "content": "Hi"}]


def test_an_image_alone_is_a_message_with_empty_text():
    [message] = chat({"role": "user", "content": [image_part()]})
    assert message["content"] == "" and len(message["images"]) == 1


@pytest.mark.parametrize("role", ["system", "developer", "assistant"])
def test_only_a_user_message_carries_images(role):
    error = refused(chat, {"role": role, "content": [{"type": "text", "text": "See:"}, image_part()]})
    assert error.param == "messages[0].content[1]"
    article = "an" if role == "assistant" else "a"
    assert error.message == (f"messages[0].content[1]: only a user message may carry images; this is {article} {role} "
                             "message.")


def test_a_tool_result_carries_no_images():
    call = {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    error = refused(chat, {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "call_1", "content": [image_part()]})
    assert error.param == "messages[1].content[0]" and "this is a tool message" in error.message


@pytest.mark.parametrize("url, shown", [
    ("file:///etc/passwd", "'file'"), ("ftp://example.com/a.png", "'ftp'"), ("javascript:alert(1)", "'javascript'"),
    ("/etc/passwd", "'an address with no scheme'"), ("cat.png", "'an address with no scheme'"),
])
def test_no_scheme_but_data_and_http_is_ever_read(url, shown):
    error = refused(chat, {"role": "user", "content": [image_part(url)]})
    assert error.code == "unsupported_image_url" and error.param == "messages[0].content[0].image_url.url"
    assert error.message.endswith(f"from data: URLs (and, started with --allow-image-urls, from http and https "
                                  f"addresses), not {shown}.")


@pytest.mark.parametrize("part", [
    {"type": "image_url"}, {"type": "image_url", "image_url": 5}, {"type": "image_url", "image_url": {}},
    {"type": "image_url", "image_url": {"url": ""}}, {"type": "image_url", "image_url": {"url": 7}},
])
def test_an_image_part_without_a_url_is_refused(part):
    error = refused(chat, {"role": "user", "content": [part]})
    assert error.code == "invalid_image_url" and error.param.startswith("messages[0].content[0].image_url")


def test_more_images_than_a_message_may_carry_are_refused_not_cut():
    parts = [image_part()] * (MAX_IMAGES_PER_MESSAGE + 1)
    error = refused(chat, {"role": "user", "content": parts})
    assert error.code == "too_many_images" and error.param == "messages[0].content"
    assert error.message == (f"messages[0].content: {MAX_IMAGES_PER_MESSAGE + 1} images are attached; one message "
                             f"takes at most {MAX_IMAGES_PER_MESSAGE}. Send the others in another message.")
    assert len(chat({"role": "user", "content": parts[:-1]})[0]["images"]) == MAX_IMAGES_PER_MESSAGE


def test_other_parts_are_named_as_unreadable():
    error = refused(chat, {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]})
    assert error.param == "messages[0].content[0]" and "image_url parts only" in error.message


def test_responses_input_image_parts_become_images():
    [message] = responses({"role": "user", "content": [
        {"type": "input_text", "text": "Describe it."},
        {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
    ]})
    assert message == {"role": "user", "content": "Describe it.",
                       "images": (ImageSource(PNG_URL, "input[0].content[1].image_url"),)}


def test_responses_refuse_a_file_id_and_images_outside_a_users_message():
    error = refused(responses, {"role": "user", "content": [{"type": "input_image", "file_id": "file-123"}]})
    assert error.param == "input[0].content[0].file_id" and "keeps no files" in error.message
    error = refused(responses, {"role": "assistant", "content": [{"type": "input_image", "image_url": PNG_URL}]})
    assert error.message == "input[0].content[0]: only a user message may carry images; this is an assistant message."
    error = refused(responses, {"role": "user", "content": [{"type": "input_image", "image_url": "file:///x.png"}]})
    assert error.code == "unsupported_image_url"
