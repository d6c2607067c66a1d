"""A served image reaching a vision model: `hearth serve` on the tiny vision pair (a real language
model and a real projector, random weights: tests/support/model_files/tiny_vision.py), its
projector found beside it as a downloaded pair's is, read by the official `openai` client.

These run the engine's image path (engine/llama), so they fail, rather than skip, where the
engine does not take images: a served image must reach the model, or the feature is not there.
What the pair's random weights write is noise; what is checked is that the image's tokens were
evaluated with the prompt (the prompt grows by the projector's image-token count per image).
"""

from __future__ import annotations

import base64
import functools
import io
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from PIL import Image as PillowImage
from support.model_files.tiny_vision import ensure_tiny_vision_pair
from support.served import ROOT, openai_client, serving

from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions
from app.images.intake import read_data_url
from app.serve.completions import Job, Refusal, Refused
from app.serve.run_job import run_job

QUESTION = "What is in the picture?"


def image_url(color, size=(40, 30)) -> str:
    out = io.BytesIO()
    PillowImage.new("RGB", size, color).save(out, "PNG")
    return f"data:image/png;base64,{base64.b64encode(out.getvalue()).decode()}"


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


@pytest.fixture(scope="module")
def served(pair):
    with serving(pair.model) as server:
        yield server


@pytest.fixture(scope="module")
def client(served):
    with openai_client(served, timeout=60) as client:
        yield client


def asked(client, served, *urls: str):
    parts = [{"type": "image_url", "image_url": {"url": url}} for url in urls] + [{"type": "text", "text": QUESTION}]
    return client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": parts}],
                                          max_tokens=2, temperature=0)


def test_a_served_image_reaches_the_model_through_chat_and_responses(client, served, pair):
    plain = asked(client, served).usage.prompt_tokens
    one = asked(client, served, image_url((200, 30, 30)))
    two = asked(client, served, image_url((200, 30, 30)), image_url((20, 40, 220), (30, 60)))
    assert one.choices[0].finish_reason in ("length", "stop")
    assert one.usage.prompt_tokens >= plain + pair.image_tokens
    assert two.usage.prompt_tokens >= one.usage.prompt_tokens + pair.image_tokens
    response = client.responses.create(model=served.model_id, store=False, max_output_tokens=2, temperature=0, input=[
        {"role": "user", "content": [{"type": "input_image", "image_url": image_url((20, 200, 30))},
                                     {"type": "input_text", "text": QUESTION}]}])
    assert response.status in ("completed", "incomplete")
    assert response.usage.input_tokens >= plain + pair.image_tokens
    # The ready line said which projector it found beside the model (printed before any request).
    assert f"it reads images (projector {pair.projector.name})" in served.stderr


def test_an_image_the_engine_cannot_read_is_refused_as_a_400_not_a_failure(gemma_path):
    """The engine's own refusal (a model loaded without a projector), as run_job gives it to the
    server: Refusal.IMAGE, which app.py answers with a 400 (test_serve_images.py)."""
    from app.engine.llama.generator import Engine

    job = Job(SamplingParams(max_tokens=2), messages=[
        {"role": "user", "content": QUESTION, "images": (read_data_url(image_url((1, 2, 3))),)}])
    engine = Engine(gemma_path, LoadOptions(n_ctx=512))
    try:
        last = run_job(engine, job, threading.Event(), lambda event: None, lambda raw: None)
    finally:
        engine.close()
    assert isinstance(last, Refused) and last.reason is Refusal.IMAGE
    assert last.message.startswith("Gemma 3 270m cannot read images: no projector (mmproj) was loaded with it.")


def test_serve_refuses_a_projector_that_is_not_the_models_before_taking_the_port(gemma_path, pair):
    result = subprocess.run([sys.executable, "-m", "app", "serve", str(gemma_path), "--port", "0", "--mmproj",
                             str(pair.projector)], capture_output=True, cwd=ROOT, timeout=120)
    assert result.returncode == 1 and result.stdout == b""  # no address was ever printed
    assert f"{pair.projector.name} is not the projector of {gemma_path.name}" in result.stderr.decode()


def test_an_image_address_is_fetched_only_by_a_server_started_with_allow_image_urls(client, served, pair, tmp_path):
    (tmp_path / "red.png").write_bytes(base64.b64decode(image_url((200, 30, 30)).partition(",")[2]))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    images = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=images.serve_forever, args=(0.02,), daemon=True).start()
    address = f"http://127.0.0.1:{images.server_address[1]}/red.png"
    try:
        with pytest.raises(openai.BadRequestError) as refused:
            asked(client, served, address)
        assert refused.value.body["code"] == "image_url_not_allowed"
        with serving(pair.model, "--allow-image-urls") as fetching, openai_client(fetching, timeout=60) as other:
            plain = asked(other, fetching).usage.prompt_tokens
            assert asked(other, fetching, address).usage.prompt_tokens >= plain + pair.image_tokens
    finally:
        images.shutdown()
        images.server_close()
