"""A model author's sampling defaults: the `general.sampling.*` keys llama.cpp's converter
writes from generation_config.json, read from the header, checked like every value in an
untrusted file, and listed by `hearth inspect`."""

from __future__ import annotations

import json
import logging

import pytest
from gguf import GGUFReader
from support.model_files import gguf_corpus as g
from support.model_files.tiny_gguf import write_gguf

from app.__main__ import build_parser
from app.engine.gguf.reading import inspect_model
from app.engine.sampling import PRESETS, ModelDefaults, SamplingError, model_params

# As the converter writes them (gguf-py's GGUFWriter.add_sampling_*: int32 counts, float32 the rest).
AUTHORS = {
    "general.sampling.temp": g.f32(1.0),
    "general.sampling.top_k": g.scalar(g.I32, 64),
    "general.sampling.top_p": g.f32(0.95),
    "general.sampling.min_p": g.f32(0.01),
    "general.sampling.penalty_repeat": g.f32(1.05),
    "general.sampling.penalty_last_n": g.scalar(g.I32, 256),
    "general.sampling.sequence": g.string("penalties;top_k;top_p;min_p;temperature"),
    "general.sampling.mirostat": g.scalar(g.I32, 0),
    "general.sampling.xtc_probability": g.f32(0.0),
}
EXPECTED = ModelDefaults(temperature=1.0, top_k=64, top_p=0.95, min_p=0.01, repeat_penalty=1.05, repeat_last_n=256)


def with_keys(path, keys: dict) -> object:
    model = g.tiny_llama()
    for key, value in keys.items():
        model = model.set(key, value)
    return model.write(path)


def test_the_authors_values_are_read_as_written(tmp_path):
    info = inspect_model(with_keys(tmp_path / "author.gguf", AUTHORS))
    assert info.sampling_defaults == EXPECTED  # 0.95, not the float32 0.949999988…
    assert set(info.sampling_ignored) == {"general.sampling.sequence", "general.sampling.mirostat",
                                          "general.sampling.xtc_probability"}


def test_the_gguf_packages_own_writer_is_read_the_same(tmp_path):
    """The keys as llama.cpp's converter writes them, through gguf-py itself (not this suite's
    byte writer): the names and types Hearth reads are the converter's."""
    def converter_keys(writer) -> None:
        writer.add_sampling_temp(0.6)
        writer.add_sampling_top_k(20)
        writer.add_sampling_top_p(0.8)
        writer.add_sampling_penalty_last_n(128)
        writer.add_sampling_mirostat_tau(5.0)

    path = write_gguf(tmp_path / "written.gguf", "llama", converter_keys)
    model = g.tiny_llama()
    fields = GGUFReader(path).fields
    for key in ("general.sampling.temp", "general.sampling.top_k", "general.sampling.top_p",
                "general.sampling.penalty_last_n", "general.sampling.mirostat_tau"):
        field = fields[key]
        model = model.set(key, g.raw(field.types[0], bytes(field.parts[-1])))
    info = inspect_model(model.write(tmp_path / "converted.gguf"))
    assert info.sampling_defaults == ModelDefaults(temperature=0.6, top_k=20, top_p=0.8, repeat_last_n=128)
    assert list(info.sampling_ignored) == ["general.sampling.mirostat_tau"]


@pytest.mark.parametrize(("key", "value", "why"), [
    ("general.sampling.temp", g.f32(-0.5), "temperature must be at least 0"),
    ("general.sampling.temp", g.f32(float("nan")), "not a finite number"),
    ("general.sampling.top_p", g.f32(0.0), "top_p must be above 0"),
    ("general.sampling.min_p", g.f32(1.5), "min_p must be at least 0 and at most 1"),
    ("general.sampling.top_k", g.scalar(g.I32, -1), "top_k must be between 0"),
    ("general.sampling.top_k", g.f32(40.0), "not a whole number"),
    ("general.sampling.penalty_last_n", g.string("64"), "not a whole number"),
    ("general.sampling.penalty_repeat", g.scalar(g.F64, 1e300), "repeat_penalty must be above 0 and at most 5"),
])
def test_a_value_out_of_range_is_dropped_with_a_log_line(tmp_path, caplog, key, value, why):
    path = with_keys(tmp_path / "odd.gguf", {**AUTHORS, key: value})
    with caplog.at_level(logging.WARNING, logger="app.engine.gguf.sampling_defaults"):
        info = inspect_model(path)  # the model itself is fine: it is not refused
    field = {"general.sampling.temp": "temperature", "general.sampling.top_p": "top_p",
             "general.sampling.min_p": "min_p", "general.sampling.top_k": "top_k",
             "general.sampling.penalty_last_n": "repeat_last_n",
             "general.sampling.penalty_repeat": "repeat_penalty"}[key]
    assert getattr(info.sampling_defaults, field) is None
    assert info.sampling_defaults.values() == {k: v for k, v in EXPECTED.values().items() if k != field}
    assert why in info.sampling_ignored[key]
    assert any(key in record.getMessage() and "odd.gguf" in record.getMessage() for record in caplog.records)


def test_a_hostile_header_lists_only_so_many_ignored_keys(tmp_path):
    info = inspect_model(with_keys(tmp_path / "many.gguf", {f"general.sampling.x{i}": g.u32(i) for i in range(500)}))
    assert len(info.sampling_ignored) == 32 and not info.sampling_defaults


def test_a_model_without_them_has_none(gemma_info):
    assert not gemma_info.sampling_defaults and gemma_info.sampling_ignored == {}
    assert model_params(gemma_info.sampling_defaults) == PRESETS["Balanced"]


def test_inspect_lists_them(tmp_path, capsys):
    args = build_parser().parse_args(["inspect", str(with_keys(tmp_path / "author.gguf", AUTHORS))])
    assert args.run(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sampling_defaults"] == {"temperature": 1.0, "top_k": 64, "top_p": 0.95, "min_p": 0.01,
                                         "repeat_penalty": 1.05, "repeat_last_n": 256}
    assert data["sampling_keys_ignored"]["general.sampling.mirostat"] == "Hearth has no such setting"


def test_the_models_defaults_are_hearths_with_the_models_values_over_them():
    params = model_params(ModelDefaults(temperature=1.0, top_k=64))
    assert (params.temperature, params.top_k) == (1.0, 64)
    assert params.with_changes(temperature=0.7, top_k=40) == PRESETS["Balanced"]
    with pytest.raises(SamplingError):
        ModelDefaults(top_p=0.0)  # only values SamplingParams accepts


@pytest.mark.parametrize(("flags", "expected"), [
    ([], model_params(EXPECTED)),
    (["--temperature", "0.2"], model_params(EXPECTED).with_changes(temperature=0.2)),
    (["--preset", "Precise"], PRESETS["Precise"]),
])
def test_chat_samples_with_the_models_defaults_unless_a_flag_overrides(tmp_path, monkeypatch, flags, expected):
    from support.scripted_backend import Script

    import app.engine.opening

    path = with_keys(tmp_path / "author.gguf", AUTHORS)
    script = Script(inspect_model(path))
    monkeypatch.setattr(app.engine.opening, "open_backend", script.open)  # the reply's parameters, not llama.cpp
    args = build_parser().parse_args(["chat", str(path), "Hi", *flags])
    assert args.run(args) == 0
    assert script.requests[-1][1] == expected


def test_chat_samples_a_model_without_them_with_hearths_defaults(gemma_path, gemma_info, monkeypatch):
    from support.scripted_backend import Script

    import app.engine.opening

    script = Script(gemma_info)
    monkeypatch.setattr(app.engine.opening, "open_backend", script.open)
    args = build_parser().parse_args(["chat", str(gemma_path), "Hi"])
    assert args.run(args) == 0
    assert script.requests[-1][1] == PRESETS["Balanced"]
