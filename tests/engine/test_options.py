"""engine/options.py: the load options' table covers every field once, and the one merge rule
(resolve) lays what a command line asks for over what the user stored, and the model author's
sampling over Hearth's until the user saved their own."""

from __future__ import annotations

from dataclasses import fields

import pytest

from app.cli.args import UsageError, check_context
from app.engine.options import (
    DEFAULT_CONTEXT,
    LOAD_OPTIONS,
    MAX_CONTEXT,
    MIN_CONTEXT,
    NOTHING_STORED,
    KvCacheType,
    LoadOptions,
    ModelSettings,
    Overrides,
    StoredSettings,
    context_for,
    resolve,
)
from app.engine.sampling import PRESETS, ModelDefaults, SamplingError, SamplingParams, model_params

AUTHORS = ModelDefaults(temperature=1.0, top_k=64)


def test_the_table_has_one_row_per_load_option_and_names_a_setting_for_each():
    assert [option.name for option in LOAD_OPTIONS] == sorted(
        (f.name for f in fields(LoadOptions)), key=[option.name for option in LOAD_OPTIONS].index)
    assert len(LOAD_OPTIONS) == len(fields(LoadOptions))
    settings_fields = {f.name for f in fields(ModelSettings)}
    assert {option.setting for option in LOAD_OPTIONS} == settings_fields - {"sampling", "system_prompt"}
    assert all(getattr(ModelSettings(), option.setting) == option.default for option in LOAD_OPTIONS)


def test_load_options_and_reloads_follow_the_table():
    settings = ModelSettings(n_ctx=2048, gpu_layers=3, cpu_threads=2, template_override="{{ x }}",
                             kv_type_v=KvCacheType.Q8_0, use_mlock=True)
    assert settings.load_options() == LoadOptions(n_ctx=2048, n_gpu_layers=3, n_threads=2, template_override="{{ x }}",
                                                   kv_type_v=KvCacheType.Q8_0, use_mlock=True)
    for option in LOAD_OPTIONS:
        changed = settings.with_changes(**{option.setting: "changed" if option.kind is str else 99})
        assert changed.needs_reload_from(settings) is option.reloads, option.name
    assert not settings.with_changes(system_prompt="Be brief.").needs_reload_from(settings)


def test_a_model_samples_as_its_author_says_until_the_user_saves_sampling():
    assert resolve(NOTHING_STORED, AUTHORS).sampling == model_params(AUTHORS)
    assert resolve(NOTHING_STORED, ModelDefaults()).sampling == PRESETS["Balanced"]
    unsaved = StoredSettings(ModelSettings(n_ctx=4096), sampling_saved=False)
    assert resolve(unsaved, AUTHORS) == ModelSettings(model_params(AUTHORS), n_ctx=4096)
    saved = StoredSettings(ModelSettings(SamplingParams(temperature=0.2)), sampling_saved=True)
    assert resolve(saved, AUTHORS).sampling == SamplingParams(temperature=0.2)


def test_overrides_win_over_what_is_stored_and_a_preset_replaces_the_stored_sampling():
    stored = StoredSettings(ModelSettings(SamplingParams(temperature=0.2, max_tokens=9), kv_type_k=KvCacheType.Q8_0,
                                          cpu_threads=3), sampling_saved=True)
    flags = Overrides(load={"n_threads": 1, "kv_type_v": KvCacheType.Q4_0}, sampling={"top_k": 5})
    merged = resolve(stored, AUTHORS, flags)
    assert (merged.cpu_threads, merged.kv_type_k, merged.kv_type_v) == (1, KvCacheType.Q8_0, KvCacheType.Q4_0)
    assert merged.sampling == SamplingParams(temperature=0.2, max_tokens=9, top_k=5)
    preset = resolve(stored, AUTHORS, Overrides(preset=PRESETS["Precise"], sampling={"seed": 7}))
    assert preset.sampling == PRESETS["Precise"].with_changes(seed=7)
    with pytest.raises(SamplingError, match="top_k"):
        resolve(stored, AUTHORS, Overrides(sampling={"top_k": -1}))


def test_the_context_rule_and_its_bounds():
    assert context_for(None, 32_768) == DEFAULT_CONTEXT
    assert context_for(None, 2048) == 2048
    assert context_for(None, 0) == DEFAULT_CONTEXT  # a model that does not say
    assert context_for(512, 32_768) == 512
    check_context(MIN_CONTEXT, 32_768)
    check_context(MAX_CONTEXT, 0)
    with pytest.raises(UsageError, match=f"^--ctx must be between {MIN_CONTEXT} and 32,768 "):
        check_context(MIN_CONTEXT - 1, 32_768)
    with pytest.raises(UsageError, match="Hearth's limit for a model that does not say"):
        check_context(MAX_CONTEXT + 1, 0)
