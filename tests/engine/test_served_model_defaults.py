"""A served request's missing sampling fields take the model's own defaults (its author's
`general.sampling.*`), as `hearth chat` and the window start from: through the real Starlette
app, the real EngineQueue and llama.cpp on a tiny loadable GGUF (random weights, so sampling at
a temperature above 0 wanders, and greedy does not)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from support.model_files import gguf_corpus as g

from app.engine.opening import open_backend
from app.engine.sampling import PRESETS
from app.engine.types import LoadOptions, LocalModel
from app.serve.app import create_app
from app.serve.queue import EngineQueue


def served_text(client: TestClient, model_id: str, **fields) -> str:
    answer = client.post("/v1/completions", json={"model": model_id, "prompt": "a b c", "max_tokens": 12, **fields})
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["text"]


@pytest.fixture
def serve(tmp_path):
    """serve(keys) -> (client, ServedModel) for a tiny llama with those header keys."""
    queues = []

    def start(keys: dict, name: str):
        model = g.tiny_llama()
        for key, value in keys.items():
            model = model.set(key, value)
        path = model.write(tmp_path / name)
        queue = EngineQueue(open_backend(LocalModel(path), LoadOptions(n_ctx=256)))
        queues.append(queue)
        return TestClient(create_app(queue)), queue.model()

    yield start
    for queue in queues:
        queue.close()


def test_a_request_without_a_temperature_takes_the_models_own(serve):
    greedy_client, greedy = serve({"general.sampling.temp": g.f32(0.0), "general.sampling.top_k": g.scalar(g.I32, 7)},
                                  "greedy-author.gguf")
    assert greedy.sampling.temperature == 0.0 and greedy.sampling.top_k == 7
    with greedy_client:
        seeds = {served_text(greedy_client, greedy.model_id, seed=seed) for seed in range(4)}
        assert len(seeds) == 1, "the author's temperature 0 is greedy whatever the seed"
        # A field the request gives still wins over the model's.
        sampled = {served_text(greedy_client, greedy.model_id, seed=seed, temperature=1.5) for seed in range(4)}
        assert len(sampled) > 1

    plain_client, plain = serve({}, "no-defaults.gguf")
    assert plain.sampling == PRESETS["Balanced"]
    with plain_client:
        texts = {served_text(plain_client, plain.model_id, seed=seed) for seed in range(4)}
    assert len(texts) > 1, "without the author's defaults Hearth's own (temperature 0.7) sample"
