"""A request's images through the real Starlette app, sent by the official `openai` client: read
into the Images the engine gets, or refused with a 400 in OpenAI's shape that says why; and
--allow-image-urls' fetching, from a real HTTP server on 127.0.0.1 that serves images, errors,
redirects and a body without end.

The engine side is a stand-in Completions that records each job: what is tested here is what
reaches the engine and what the client is told. A real vision model reading a served image is
test_serve_vision.py's, and a text-only model's refusal through the real `hearth serve` is
test_serve_openai.py's.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from PIL import Image as PillowImage
from starlette.testclient import TestClient

from app.engine.types import ReplyStats, StopReason
from app.images.image import ImageError
from app.images.intake import read_data_url, read_image
from app.images.limits import MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE
from app.serve.app import create_app
from app.serve.completions import Refusal, Refused, ServedModel
from app.serve.image_fetch import MAX_REDIRECTS, fetch_image_bytes
from app.serve.image_reading import MAX_IMAGES_PER_REQUEST
from app.serve.kept_responses import KeptResponses
from app.serve.run_job import _refusal

MODEL = "stand-in.gguf"
ENDED = ReplyStats(prompt_tokens=12, completion_tokens=2, stop_reason=StopReason.END_OF_TURN)
CHUNK = 64 * 1024


def png(color=(200, 30, 30), size=(8, 6)) -> bytes:
    out = io.BytesIO()
    PillowImage.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


RED, BLUE = png(), png((20, 40, 220), (5, 7))


def data_url(data: bytes, media_type: str = "image/png") -> str:
    import base64

    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class Recorded:
    """A Completions that records each job and answers "Seen." at once."""

    def __init__(self, reads_images: bool):
        self.jobs = []
        self.event: object = ENDED
        self._model = ServedModel(MODEL, 2048, reads_images=reads_images, name="Tiny Vision")

    def model(self) -> ServedModel:
        return self._model

    def submit(self, job, deliver, follow=None):  # its replies are scripted events, none to follow
        self.jobs.append(job)
        if isinstance(self.event, Refused):
            deliver(self.event)
        else:
            deliver("Seen.")
            deliver(self.event)
        return self

    def cancel(self) -> None:
        pass


class ImageServer:
    """Images and every way of not giving one, on 127.0.0.1, each request's path kept."""

    def __init__(self):
        self.paths: list[str] = []
        self.sent_endless = 0
        self.endless_done = threading.Event()
        self.release = threading.Event()
        handler = type("Handler", (_ImageHandler,), {"owner": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


class _ImageHandler(BaseHTTPRequestHandler):
    owner: ImageServer

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):  # noqa: N802 - the base class's name
        self.owner.paths.append(self.path)
        routes = {
            "/red.png": lambda: self._send(200, RED, "image/png"),
            "/page.html": lambda: self._send(200, b"<html><body>Log in</body></html>", "text/html"),
            "/moved": lambda: self._redirect("/red.png"),
            "/to-file": lambda: self._redirect("file:///etc/passwd"),
            "/loop": lambda: self._redirect("/loop"),
            "/endless": self._endless,
            "/declared-huge": self._declared_huge,
            "/stall": self._stall,
        }
        routes.get(self.path, lambda: self._send(404, b"no such image", "text/plain"))()

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _endless(self) -> None:
        """A PNG's first bytes, then zeros without end and without a length (HTTP/1.0: the
        body ends when the connection does), until the client stops reading."""
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        try:
            self.wfile.write(RED[:32])
            while not self.owner.release.is_set():
                self.wfile.write(bytes(CHUNK))
                self.owner.sent_endless += CHUNK
        except OSError:
            pass  # the client closed the connection: what is being tested
        finally:
            self.owner.endless_done.set()

    def _declared_huge(self) -> None:
        """A length over the limit, then a little of the body, then nothing: a client that
        believed the length would wait here until its timeout."""
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(MAX_IMAGE_BYTES * 2))
        self.end_headers()
        self.wfile.write(RED[:32])
        self.wfile.flush()
        self.owner.release.wait(30)

    def _stall(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(RED)))
        self.end_headers()
        self.wfile.flush()
        self.owner.release.wait(30)


@pytest.fixture
def images():
    server = ImageServer()
    yield server
    server.stop()


def serve(engine: Recorded, allow_image_urls: bool = False):
    http = TestClient(create_app(engine, allow_image_urls=allow_image_urls))
    return http, openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http, max_retries=0)


@pytest.fixture
def vision():
    engine = Recorded(reads_images=True)
    http, client = serve(engine)
    with http:
        yield engine, client


@pytest.fixture
def fetching():
    engine = Recorded(reads_images=True)
    http, client = serve(engine, allow_image_urls=True)
    with http:
        yield engine, client


def ask(client, *urls: str, text: str = "What is this?"):
    parts = [{"type": "text", "text": text}] + [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    return client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": parts}])


def refusal(call, code: str) -> str:
    """The 400's message, after checking its status, its code and OpenAI's shape."""
    with pytest.raises(openai.BadRequestError) as caught:
        call()
    error = caught.value.body
    assert caught.value.status_code == 400 and sorted(error) == ["code", "message", "param", "type"]
    assert error["code"] == code and error["type"] == "invalid_request_error"
    return error["message"]


def test_an_image_reaches_the_engine_as_an_image_before_its_text(vision):
    engine, client = vision
    reply = ask(client, data_url(RED), data_url(BLUE))
    assert reply.choices[0].message.content == "Seen."
    [message] = engine.jobs[0].messages
    assert message["content"] == "What is this?"
    red, blue = message["images"]
    assert (red.digest, red.media_type, red.width, red.height) == (hashlib.sha256(RED).hexdigest(), "image/png", 8, 6)
    assert (blue.width, blue.height) == (5, 7) and red != blue


def test_a_responses_input_image_reaches_the_engine(vision):
    engine, client = vision
    response = client.responses.create(model=MODEL, store=False, input=[{"role": "user", "content": [
        {"type": "input_text", "text": "Describe it."}, {"type": "input_image", "image_url": data_url(RED),
                                                         "detail": "low"}]}])
    assert response.output_text == "Seen."
    [message] = engine.jobs[0].messages
    assert message["content"] == "Describe it." and [image.digest for image in message["images"]] == [
        hashlib.sha256(RED).hexdigest()]


def test_a_model_that_cannot_read_images_refuses_them_before_reading_any():
    engine = Recorded(reads_images=False)
    http, client = serve(engine, allow_image_urls=True)
    with http:
        for url in (data_url(RED), data_url(b"not an image"), "http://192.0.2.1/cat.png"):
            message = refusal(lambda: ask(client, url), "model_cannot_read_images")
            assert message.startswith("Tiny Vision cannot read images: no projector (mmproj) was loaded with it.")
            assert "--mmproj" in message
        assert ask(client, text="Hi").choices[0].message.content == "Seen."  # text alone is answered
    assert len(engine.jobs) == 1


def test_a_damaged_image_is_refused_with_intakes_words(vision):
    engine, client = vision
    for url in (data_url(RED[:40]), data_url(b"GIF89a" + bytes(20), "image/gif"), "data:image/png;base64,@@@@",
                "data:text/plain;base64,aGk="):
        with pytest.raises(ImageError) as intake:
            read_data_url(url)
        message = refusal(lambda: ask(client, url), "invalid_image")
        assert message == f"messages[0].content[1].image_url.url: {intake.value}"
    assert engine.jobs == []


def test_an_http_address_is_refused_unless_the_server_allows_them(vision, images):
    engine, client = vision
    message = refusal(lambda: ask(client, data_url(RED), images.url("/red.png")), "image_url_not_allowed")
    assert message == ("messages[0].content[2].image_url.url: this server fetches no address you did not choose; "
                       "send the image as a data: URL, or start it with --allow-image-urls to let requests name http "
                       "and https addresses.")
    assert images.paths == [] and engine.jobs == []


def test_more_images_than_a_request_may_carry_are_refused(vision):
    engine, client = vision
    per_message = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(RED)}}]
                    * MAX_IMAGES_PER_MESSAGE}, {"role": "assistant", "content": "Seen."}]
    messages = per_message * (MAX_IMAGES_PER_REQUEST // MAX_IMAGES_PER_MESSAGE)
    messages.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(BLUE)}}]})
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODEL, messages=messages)
    error = caught.value.body
    assert error["code"] == "too_many_images" and error["param"] == f"messages[{len(messages) - 1}].content[0].image_url.url"
    assert f"{MAX_IMAGES_PER_REQUEST + 1} images in one request" in error["message"]
    client.chat.completions.create(model=MODEL, messages=messages[:-1])  # as many as allowed are read
    assert len(engine.jobs) == 1


def test_an_allowed_address_is_fetched_and_a_redirect_followed(fetching, images):
    engine, client = fetching
    ask(client, images.url("/red.png"), images.url("/moved"))
    assert [image.digest for image in engine.jobs[0].messages[0]["images"]] == [hashlib.sha256(RED).hexdigest()] * 2
    assert images.paths == ["/red.png", "/moved", "/red.png"]


def test_each_fetch_that_fails_says_why(fetching, images):
    engine, client = fetching
    where = images.url("")
    with pytest.raises(ImageError) as intake:
        read_image(b"<html><body>Log in</body></html>", "page.html")
    for path, words in [
        ("/missing.png", f"The server at {where}/missing.png answered 404 (Not Found), not the image."),
        ("/to-file", f"The image at {where}/to-file redirects to 'file:///etc/passwd', which is not an http or https "
                     "address; this server follows redirects to those only."),
        ("/loop", f"The image at {where}/loop redirects more than {MAX_REDIRECTS} times."),
        ("/page.html", str(intake.value)),
    ]:
        message = refusal(lambda: ask(client, images.url(path)), "invalid_image")
        assert message == f"messages[0].content[1].image_url.url: {words}"
    assert "/etc/passwd" not in images.paths and images.paths.count("/loop") == MAX_REDIRECTS + 1
    assert engine.jobs == []


def test_a_body_past_the_limit_is_cut_there_whether_or_not_its_length_is_declared(fetching, images):
    engine, client = fetching
    for path in ("/endless", "/declared-huge"):
        message = refusal(lambda: ask(client, images.url(path)), "invalid_image")
        assert message == (f"messages[0].content[1].image_url.url: The image at {images.url(path)} is larger than "
                           "50 MB, the most this server reads for an image.")
    assert images.endless_done.wait(30)  # the server's writes failed: the client had closed the connection
    # What the server got out before that: the limit, and at most what the sockets' buffers hold beyond it.
    assert MAX_IMAGE_BYTES < images.sent_endless < MAX_IMAGE_BYTES + 32 * 2**20
    assert engine.jobs == []


def test_a_server_that_stalls_is_given_up_on_at_the_deadline(images):
    with pytest.raises(ImageError, match=r"^The image at http://127\.0\.0\.1:\d+/stall did not arrive within 0\.5 s\.$"):
        asyncio.run(fetch_image_bytes(images.url("/stall"), timeout_s=0.5))


def test_an_image_the_engine_refuses_is_a_400_that_says_why(vision):
    engine, client = vision
    refused = _refusal(ImageError("Tiny Vision cannot read images: no projector (mmproj) was loaded with it."))
    assert refused == Refused(Refusal.IMAGE, "Tiny Vision cannot read images: no projector (mmproj) was loaded with it.")
    engine.event = refused
    for stream in (False, True):
        message = refusal(lambda: client.chat.completions.create(
            model=MODEL, stream=stream, messages=[{"role": "user", "content": "Hi"}]), "invalid_image")
        assert message == refused.message


def test_a_kept_response_keeps_its_images_for_the_next_one(tmp_path):
    engine = Recorded(reads_images=True)
    http = TestClient(create_app(engine, kept=KeptResponses(tmp_path / "conversations.sqlite3")))
    with http:
        client = openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http, max_retries=0)
        first = client.responses.create(model=MODEL, input=[{"role": "user", "content": [
            {"type": "input_text", "text": "What colour?"}, {"type": "input_image", "image_url": data_url(RED)}]}])
        client.responses.create(model=MODEL, previous_response_id=first.id, input="And now?")
    question, answer, follow_up = engine.jobs[1].messages
    assert question["content"] == "What colour?" and [image.digest for image in question["images"]] == [
        hashlib.sha256(RED).hexdigest()]
    assert answer == {"role": "assistant", "content": "Seen."} and follow_up == {"role": "user", "content": "And now?"}
