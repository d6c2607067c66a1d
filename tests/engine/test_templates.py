"""Template rendering: HF semantics, sandboxing, system folding, fallbacks, overrides."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.engine.gguf.reading import inspect_model
from app.engine.templates.chat_template import (
    FALLBACK_NAMES,
    ChatTemplate,
    TemplateError,
    fallback_source,
    template_for,
)
from app.engine.templates.sandbox import MAX_RENDER_SECONDS

FAMILIES = {f["family"]: f for f in json.loads((Path(__file__).parents[1] / "data" / "families.json").read_text())}
CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there!"},
    {"role": "user", "content": "How are you?"},
]


def test_gemma_fallback_is_the_published_gemma3_template(gemma_path):
    template = template_for(inspect_model(gemma_path))
    assert template.name == "fallback:gemma"
    assert template.source == FAMILIES["gemma-3"]["chat_template"]
    assert template.render(CONVERSATION) == (
        "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello<end_of_turn>\n"
        "<start_of_turn>model\nHi there!<end_of_turn>\n"
        "<start_of_turn>user\nHow are you?<end_of_turn>\n<start_of_turn>model\n"
    )


def test_every_fallback_compiles_and_renders():
    for name in FALLBACK_NAMES:
        text = ChatTemplate(fallback_source(name), "<s>", "</s>").render(CONVERSATION)
        assert "How are you?" in text


def test_override_wins(gemma_path):
    template = template_for(inspect_model(gemma_path), override="{% for m in messages %}[{{ m.content }}]{% endfor %}")
    assert template.name == "custom"
    assert template.render(CONVERSATION[1:2]) == "[Hello]"


def test_system_role_rejected_is_folded_into_first_user_message():
    mistral = FAMILIES["mistral-v0.1"]
    template = ChatTemplate(mistral["chat_template"], mistral["bos_token"], mistral["eos_token"])
    template_without_system = ChatTemplate(
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    )
    assert template_without_system.render(CONVERSATION) == (
        "<user>You are a helpful assistant.\n\nHello<assistant>Hi there!<user>How are you?"
    )
    assert "How are you?" in template.render(CONVERSATION)


def test_template_rejection_without_system_is_a_clear_error():
    template = ChatTemplate("{{ raise_exception('Conversation roles must alternate') }}")
    with pytest.raises(TemplateError, match="rejected this conversation: Conversation roles must alternate"):
        template.render(CONVERSATION[1:])


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ messages.__class__.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{% set x = messages.append({'role': 'user', 'content': 'injected'}) %}",
    ],
)
def test_sandbox_escapes_are_refused(source):
    with pytest.raises(TemplateError):
        ChatTemplate(source).render(CONVERSATION)


def test_runaway_template_is_stopped():
    runaway = "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}"
    with pytest.raises(TemplateError, match="absurdly long|took more than"):
        ChatTemplate(runaway).render(CONVERSATION)


@pytest.mark.parametrize("source", [
    # Loops that write nothing never reach the output check; the deadline is compiled into them.
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
    "{% macro m(n) %}{% for i in range(100000) %}{% endfor %}{{ m(n) if n else '' }}{% endmacro %}{{ m(1) }}",
])
def test_a_template_that_loops_without_writing_is_stopped_by_the_deadline(source):
    started = time.monotonic()
    with pytest.raises(TemplateError, match="took more than|failed"):
        ChatTemplate(source).render(CONVERSATION)
    assert time.monotonic() - started < MAX_RENDER_SECONDS + 1


@pytest.mark.parametrize("source", [
    "{% set x = 'a' * 1000000000 %}{{ x|length }}",
    "{% set x = 1000000000 * [0] %}{{ x|length }}",
    "{{ 7 ** 100000000 }}",
    "{{ 'x'|center(300000000) }}",
    "{{ 'x'.ljust(300000000) }}",
    "{{ '%300000000s'|format('x') }}",
    "{{ '%300000000s' % 'x' }}",
    "{{ '{:>300000000}'.format('x') }}",
    "{{ 'a\nb'|indent(300000000) }}",
    "{% set s = 'x' * 4000000 %}{{ s.replace('x', 'yy') }}",
])
def test_a_template_that_builds_a_huge_value_is_refused_at_once(source):
    started = time.monotonic()
    with pytest.raises(TemplateError, match="absurdly large"):
        ChatTemplate(source).render(CONVERSATION)
    assert time.monotonic() - started < 1.0


def test_ordinary_arithmetic_repetition_and_formatting_still_work():
    source = ("{{ '=' * 10 }} {{ 2 ** 10 }} {{ [1, 2] * 2 }} {{ 3 * 4 }} {{ '%5.1f'|format(2.25) }} "
              "{{ 'Cutoff 20240601: %s' % 'x' }} {{ 'id 12345678 {:>3}'.format(7) }} {{ 'x'|center(5) }}")
    assert ChatTemplate(source).render(CONVERSATION) == (
        "========== 1024 [1, 2, 1, 2] 12   2.2 Cutoff 20240601: x id 12345678   7   x  ")


def test_syntax_error_names_the_line():
    with pytest.raises(TemplateError, match="syntax error on line 2"):
        ChatTemplate("ok\n{% for m in messages %}")


def test_python_errors_inside_templates_become_template_errors():
    with pytest.raises(TemplateError, match="ZeroDivisionError|division"):
        ChatTemplate("{{ 1 / 0 }}").render(CONVERSATION)


def test_hf_globals_and_filters():
    template = ChatTemplate(
        "{{ messages[1].content | tojson }}|{{ strftime_now('%Y') | length }}|"
        "{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}{{ m.role }}{% endfor %}"
        "{% generation %}G{% endgeneration %}"
    )
    assert template.render([{"role": "system", "content": "x"}, {"role": "user", "content": "héllo \"q\""}]) == (
        '"héllo \\"q\\""|4|systemG'
    )
