"""A server's answer made into what the model reads and what the window shows: capped, cut on a
character, images checked before they are kept, and quick however big the answer."""

from __future__ import annotations

import base64
import json
import time

import mcp_types as t
from support.mcp_servers.toolbox import PIXEL_PNG

from app.tool_servers.limits import IMAGE_CAP_BYTES, RESULT_CAP_BYTES
from app.tool_servers.results import cap_text, error_outcome, outcome_from_result
from app.tool_servers.types import PartKind


def result(*content, structured=None, error=False) -> t.CallToolResult:
    return t.CallToolResult(content=list(content), structured_content=structured, is_error=error)


def text(value: str) -> t.TextContent:
    return t.TextContent(type="text", text=value)


def image(data: bytes, mime: str = "image/png") -> t.ImageContent:
    return t.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


def test_text_is_read_as_it_is():
    outcome = outcome_from_result(result(text("3"), text("and more")), elapsed_s=0.5)
    assert (outcome.model_text, outcome.error, outcome.cut, outcome.elapsed_s) == ("3\nand more", False, False, 0.5)
    assert [part.text for part in outcome.parts] == ["3", "and more"]


def test_an_error_result_is_an_error_outcome():
    assert outcome_from_result(result(text("no such city"), error=True)).error
    failed = error_outcome("The server stopped.")
    assert failed.error and failed.model_text == "The server stopped." and failed.parts[0].text == failed.model_text


def test_a_small_real_image_is_kept_for_a_thumbnail_and_named_to_the_model():
    outcome = outcome_from_result(result(image(PIXEL_PNG)))
    [part] = outcome.parts
    assert (part.kind, part.data, part.mime) == (PartKind.IMAGE, PIXEL_PNG, "image/png")
    assert outcome.model_text == "[image: image/png, 70 B]"


def test_an_image_that_is_too_big_not_an_image_or_not_base64_is_named_not_kept():
    big = image(b"\x89PNG\r\n\x1a\n" + bytes(IMAGE_CAP_BYTES))
    liar = image(b"<svg onload=alert(1)>", "image/png")
    svg = image(b"<svg/>", "image/svg+xml")
    junk = t.ImageContent(type="image", data="!!!not base64!!!", mime_type="image/png")
    parts = outcome_from_result(result(big, liar, svg, junk)).parts
    assert [part.kind for part in parts] == [PartKind.OTHER] * 4
    assert not any(part.data for part in parts)
    assert "larger than" in parts[0].text and "not a image/png image" in parts[1].text
    assert "not a format" in parts[2].text and "not valid base64" in parts[3].text


def test_structured_content_is_shown_as_json_and_read_when_there_is_no_text():
    with_text = outcome_from_result(result(text('{"total": 3}'), structured={"total": 3}))
    assert with_text.model_text == '{"total": 3}'
    assert with_text.parts[-1].kind is PartKind.JSON and json.loads(with_text.parts[-1].text) == {"total": 3}
    alone = outcome_from_result(result(structured={"total": 3}))
    assert json.loads(alone.model_text) == {"total": 3}


def test_audio_resources_and_links_are_named():
    audio = t.AudioContent(type="audio", data=base64.b64encode(b"RIFF....").decode(), mime_type="audio/wav")
    embedded = t.EmbeddedResource(type="resource", resource=t.TextResourceContents(uri="file:///a.txt", text="hello"))
    blob = t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(uri="file:///a.bin", blob="AAAA"))
    link = t.ResourceLink(type="resource_link", name="notes", uri="file:///notes.md")
    outcome = outcome_from_result(result(audio, embedded, blob, link))
    assert outcome.model_text.splitlines() == [
        "[audio: audio/wav, 8 B]", "[resource file:///a.txt]", "hello", "[resource file:///a.bin: unknown type, 3 B]",
        "[resource link: notes file:///notes.md]"]


def test_twelve_megabytes_are_cut_to_the_cap_in_milliseconds():
    for huge in ("x" * 12_000_000, "é" * 6_000_000, "x" * 100 + "€" * 4_000_000):
        began = time.perf_counter()
        outcome = outcome_from_result(result(text(huge)))
        took = time.perf_counter() - began
        assert took < 0.25, took
        assert outcome.cut and len(outcome.model_text.encode()) <= RESULT_CAP_BYTES
        assert outcome.model_text.endswith("MB more were left out]")
        assert "[… result cut: 12.0 MB more were left out]" in outcome.model_text or "€" in huge
        assert huge.startswith(outcome.model_text.split("\n[…")[0])  # cut between characters, never inside one
        assert sum(len(part.text.encode()) for part in outcome.parts) <= RESULT_CAP_BYTES


def test_the_cap_counts_bytes_and_never_cuts_a_character():
    kept, left_out = cap_text("€" * 1000, 200)  # three bytes each
    head = kept.split("\n")[0]
    assert set(head) == {"€"} and len(kept.encode()) <= 200 and left_out == 3000 - len(head.encode())
    assert cap_text("short", 200) == ("short", 0)


def test_a_lone_surrogate_becomes_a_question_mark_so_it_can_be_stored():
    outcome = outcome_from_result(result(text("a\ud800b")))
    assert outcome.model_text == "a?b"
    outcome.model_text.encode("utf-8")


def test_many_images_keep_only_the_first_few():
    outcome = outcome_from_result(result(*[image(PIXEL_PNG)] * 20))
    kinds = [part.kind for part in outcome.parts]
    assert kinds.count(PartKind.IMAGE) == 8 and kinds.count(PartKind.OTHER) == 12
