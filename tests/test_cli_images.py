"""`hearth chat --image FILE` run as a user runs it (`python -m app …` in a subprocess, under a
HEARTH_HOME of its own): each refusal a usage error that says why, before any model loads; a
model on a server sent the images as OpenAI's content parts (a real local stand-in records the
request body), its refusal shown in its own words; `--conversation` storing the images with the
message; and the tiny vision pair reading one (the engine's image path, through the command line).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image as PillowImage
from support.remote_servers import stand_in  # noqa: F401 - the fixture

from app.images.limits import MAX_IMAGES_PER_MESSAGE
from app.store import ConversationStore

ROOT = Path(__file__).resolve().parents[1]
GREEDY = ["--temperature", "0", "--max-tokens", "3"]


def hearth(home: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "HEARTH_HOME": str(home)})


def log_text(home: Path) -> str:
    path = home / "logs" / "hearth.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def write_png(path: Path, color=(200, 30, 30), size=(8, 6)) -> Path:
    PillowImage.new("RGB", size, color).save(path, "PNG")
    return path


def data_url(path: Path) -> str:
    return f"data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"


@pytest.fixture
def red(tmp_path) -> Path:
    return write_png(tmp_path / "red.png")


def refused(result: subprocess.CompletedProcess, message: str) -> None:
    """A usage error (exit status 2) saying `message`, nothing on stdout, no traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert stderr == f"hearth: error: {message}\n" and result.stdout == b""


def test_an_image_for_a_model_that_cannot_read_images_is_refused_before_it_loads(tmp_path, gemma_path, red):
    refused(hearth(tmp_path, "chat", gemma_path, "What is this?", "--image", red),
            "Gemma 3 270m cannot read images: no projector (mmproj) was given with --mmproj or found beside the model "
            "file. Give --mmproj FILE (the model's mmproj-*.gguf), or send the message without --image")
    assert "llama" not in log_text(tmp_path)  # llama.cpp never started


def test_a_missing_damaged_or_wrong_file_is_refused_naming_it(tmp_path, gemma_path, red):
    from app.images.image import ImageError
    from app.images.intake import read_image_file

    text = tmp_path / "notes.png"
    text.write_text("not a picture")
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(red.read_bytes()[:40])
    for path in (tmp_path / "missing.png", text, truncated, tmp_path):
        with pytest.raises(ImageError) as intake:
            read_image_file(path)
        refused(hearth(tmp_path, "chat", gemma_path, "What is this?", "--image", red, "--image", path),
                f"--image {path}: {intake.value}")


def test_more_images_than_a_message_takes_are_refused(tmp_path, gemma_path, red):
    many = [arg for _ in range(MAX_IMAGES_PER_MESSAGE + 1) for arg in ("--image", red)]
    refused(hearth(tmp_path, "chat", gemma_path, "Hi", *many),
            f"--image: {MAX_IMAGES_PER_MESSAGE + 1} images are attached; one message takes at most "
            f"{MAX_IMAGES_PER_MESSAGE}. Send the others in another message.")


def test_a_projector_that_is_missing_or_not_the_models_is_refused_before_it_loads(tmp_path, gemma_path, red):
    from support.model_files.tiny_vision import ensure_tiny_vision_pair

    missing = hearth(tmp_path, "chat", gemma_path, "Hi", "--mmproj", tmp_path / "mmproj-none.gguf")
    assert missing.returncode == 1 and missing.stdout == b""
    assert missing.stderr.decode() == f"hearth: error: The projector {tmp_path / 'mmproj-none.gguf'} was not found.\n"
    pair = ensure_tiny_vision_pair()
    other = hearth(tmp_path, "chat", gemma_path, "Hi", "--image", red, "--mmproj", pair.projector)
    assert other.returncode == 1 and other.stdout == b""
    assert f"{pair.projector.name} is not the projector of {gemma_path.name}" in other.stderr.decode()
    assert "llama" not in log_text(tmp_path)


def test_a_server_is_sent_the_images_as_content_parts_before_the_text(tmp_path, stand_in, red):  # noqa: F811
    blue = write_png(tmp_path / "blue.png", (20, 40, 220), (5, 7))
    result = hearth(tmp_path, "chat", "--server", stand_in.url("ok"), "stand-in", "What are these?", "--image", red,
                    "--image", blue)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"Hello there.\n"
    [chat] = [request.body for request in stand_in.requests if request.body is not None]
    assert chat["messages"] == [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(red)}},
        {"type": "image_url", "image_url": {"url": data_url(blue)}},
        {"type": "text", "text": "What are these?"},
    ]}]


def test_a_server_that_refuses_images_is_shown_in_its_own_words(tmp_path, red):
    server = _RefusesImages()
    try:
        result = hearth(tmp_path, "chat", "--server", server.url, "text-only", "What is this?", "--image", red)
    finally:
        server.stop()
    assert result.returncode == 1 and result.stdout == b""
    assert "image input is not supported by this model" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()


def test_chat_in_a_conversation_stores_the_images_with_the_message(tmp_path, stand_in, red):  # noqa: F811
    (tmp_path / "data").mkdir()
    with ConversationStore(tmp_path / "data" / "conversations.sqlite3") as store:
        cid = store.create_conversation(model="stand-in")
    result = hearth(tmp_path, "chat", "--conversation", cid, "--server", stand_in.url("ok"), "--model", "stand-in",
                    "What colour is it?", "--image", red)
    assert result.returncode == 0, result.stderr.decode()
    with ConversationStore(tmp_path / "data" / "conversations.sqlite3") as store:
        question, answer = store.messages(cid)
        assert question.content == "What colour is it?" and answer.content == "Hello there."
        assert [(ref.digest, ref.width, ref.height) for ref in question.images] == [
            (hashlib.sha256(red.read_bytes()).hexdigest(), 8, 6)]
    [chat] = [request.body for request in stand_in.requests if request.body is not None]
    assert chat["messages"][-1]["content"][0] == {"type": "image_url", "image_url": {"url": data_url(red)}}


def test_the_tiny_vision_pair_reads_an_image_it_finds_its_projector_for(tmp_path, red):
    """Through the real engine (the lead's image path in engine/llama): the projector beside the
    model is found and loaded, and the image's tokens join the prompt. Fails, rather than
    skipping, where the engine does not take images yet."""
    from support.model_files.tiny_vision import ensure_tiny_vision_pair

    pair = ensure_tiny_vision_pair()
    plain = hearth(tmp_path, "chat", pair.model, "What is this?", *GREEDY, "--stats", "json")
    seen = hearth(tmp_path, "chat", pair.model, "What is this?", "--image", red, *GREEDY, "--stats", "json")
    assert plain.returncode == 0, plain.stderr.decode()
    assert seen.returncode == 0, seen.stderr.decode()
    without = json.loads(plain.stderr.decode().splitlines()[-1])["prompt_tokens"]
    with_image = json.loads(seen.stderr.decode().splitlines()[-1])["prompt_tokens"]
    assert with_image >= without + pair.image_tokens


class _RefusesImages:
    """An OpenAI-compatible server whose model reads no images: it lists "text-only" and answers
    every chat with the 400 such servers send."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # noqa: A002 - the base class's name
                pass

            def do_GET(self):  # noqa: N802 - the base class's name
                self._json(200, {"object": "list", "data": [{"id": "text-only", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self._json(400, {"error": {"message": "image input is not supported by this model",
                                           "type": "invalid_request_error"}})

            def _json(self, status: int, data: dict) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
