"""`POST /v1/embeddings` of `hearth serve`, read by the official `openai` client as a user's
script reads it (its default asks for base64), and by plain HTTP for the float form and the
refusals: the real llama.cpp on the scripted chat model and the real all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np
import pytest
from support.model_files.embedding_model import ensure_minilm
from support.model_files.scripted_models import scripted_models
from support.served import openai_client, serving


@pytest.fixture(scope="module")
def served():
    model = ensure_minilm().gguf
    with serving(scripted_models()["qwen3"].path, "--ctx", "2048", "--embedding-model", str(model)) as server:
        server.embedding_id = model.stem
        yield server


def post(served, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"{served.base_url}/embeddings", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_openai_client_gets_unit_vectors_that_rank_meaning(served):
    with openai_client(served) as client:
        texts = ["The cat sleeps on the sofa.", "A kitten naps on the couch.", "Interest rates rose in March."]
        answer = client.embeddings.create(model=served.embedding_id, input=texts)
        assert [item.index for item in answer.data] == [0, 1, 2] and answer.usage.prompt_tokens > 0
        vectors = np.array([item.embedding for item in answer.data])
        assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
        listed = [model.id for model in client.models.list()]
        assert served.embedding_id in listed and len(listed) == 2


def test_floats_by_plain_http_match_the_base64_form(served):
    status, floats = post(served, {"model": served.embedding_id, "input": "hello", "encoding_format": "float"})
    assert status == 200 and len(floats["data"][0]["embedding"]) == 384
    with openai_client(served) as client:
        base64_form = client.embeddings.create(model=served.embedding_id, input="hello").data[0].embedding
    assert np.allclose(floats["data"][0]["embedding"], base64_form, atol=1e-6)


@pytest.mark.parametrize(("body", "said"), [
    ({"input": [1, 2, 3]}, "token-id arrays"),
    ({"input": []}, "a list of strings"),
    ({"input": "x", "encoding_format": "binary"}, "encoding_format"),
    ({"input": "x", "dimensions": 64}, "dimensions"),
])
def test_what_cannot_be_served_is_a_400_naming_the_field(served, body, said):
    status, answer = post(served, {"model": served.embedding_id, **body})
    assert status == 400 and said in answer["error"]["message"]


def test_another_models_name_is_a_404(served):
    status, answer = post(served, {"model": "text-embedding-3-small", "input": "x"})
    assert status == 404 and served.embedding_id in answer["error"]["message"]
