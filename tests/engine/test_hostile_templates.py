"""A corpus of hostile chat templates: each ends in a clear one-line TemplateError (or, where it
is harmless, a correct render), in well under a few seconds and a few hundred MB.

The templates are generated strings, rendered in one subprocess (see _RUNNER) that measures
each one's time and peak resident memory under an address-space cap.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.engine.templates.chat_template import (
    MAX_MESSAGE_CHARS,
    ChatTemplate,
    MessageTooLongError,
    fallback_source,
)
from app.engine.templates.source import MAX_NESTING, MAX_TEMPLATE_CHARS

ROOT = Path(__file__).resolve().parents[2]
CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello"},
]
TEST_DEADLINE_S = 0.3  # the render deadline in these tests: loops end in a third of a second
PEAK_LIMIT_MB = 128  # the greediest case peaks near 35 MB
BIG = "'x' * 3000000"  # a value just inside the size allowance
LARGE = "absurdly large"
LONG_PROMPT = "absurdly long prompt"
BUILT = "characters of values|took more than"  # whichever limit a loop meets first
TOOK = "took more than"
UNSAFE = "unsafe"
NESTED = "nested"


def nested(opening: str, closing: str, depth: int, middle: str = "x") -> str:
    return opening * depth + middle + closing * depth


def chain(head: str, link: str, count: int) -> str:
    return "{{ " + head + link * count + " }}"


HOSTILE = [
    # Values that grow past the allowance: concatenation, addition, repetition, containers.
    ("concat", "{% set a = " + BIG + " %}{% set b = a ~ a %}{{ b|length }}", LARGE),
    ("concat-three-ways", "{% set a = " + BIG + " %}{{ (a ~ 'x' ~ a)|length }}", LARGE),
    ("plus", "{% set a = " + BIG + " %}{% set b = a + a %}{{ b|length }}", LARGE),
    ("list-plus", "{% set a = [" + BIG + "] %}{{ (a + a)|length }}", LARGE),
    ("repeat-list", "{% set a = " + BIG + " %}{{ ([a] * 10)|length }}", LARGE),
    ("repeat-string", "{{ ('x' * 1000000000)|length }}", LARGE),
    ("literal-list-joined", "{% set a = " + BIG + " %}{{ [a, a, a, a, a]|join|length }}", LARGE),
    ("literal-list-as-text", "{% set a = " + BIG + " %}{{ [a, a, a, a, a]|string|length }}", LARGE),
    ("literal-list-printed", "{% set a = " + BIG + " %}{{ [a, a, a, a, a] }}", LARGE),
    ("literal-list-formatted", "{% set a = " + BIG + " %}{{ '%s' % ([a, a, a],) }}", LARGE),
    ("namespace-list-growth",
     "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + ['x' * 1000000] %}"
     "{% endfor %}{{ ns.l|length }}", LARGE),
    ("namespace-string-growth",
     "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ ('x' * 100000) %}"
     "{% endfor %}{{ ns.s|length }}", BUILT),
    ("namespace-attributes", "{% set a = " + BIG + " %}{% set ns = namespace() %}{% set ns.a = a %}"
     "{% set ns.b = a %}{{ ns }}", LARGE),
    ("many-sets", "{% set s = " + BIG + " %}" + "".join(
        f"{{% set v{i} = s ~ '{i}' %}}" for i in range(12)) + "{{ v11|length }}", BUILT),
    ("set-block-loop", "{% set x %}{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}{% endset %}{{ x|length }}",
     BUILT),
    ("macro-output-loop", "{% macro m() %}{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}{% endmacro %}"
     "{{ m()|length }}", BUILT),
    ("dict-growth", "{% set d = dict(a=" + BIG + ", b=" + BIG + ") %}{{ d|length }}", LARGE),
    ("namespace-call", "{{ namespace(**dict(a=" + BIG + ", b=" + BIG + ")) }}", LARGE),
    ("value-cycle", "{% set ns = namespace(s=[]) %}{% set ns.s = ns %}{{ ns }}", LARGE),
    ("value-nesting", "{% set ns = namespace(x=0) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}"
     "{{ ns.x }}", LARGE),
    ("output", "{% set a = " + BIG + " %}{{ a }}{{ a }}", LONG_PROMPT),
    # Operations whose result outgrows their operands.
    ("join-separator", "{{ ('x' * 2000)|join('y' * 2000000) }}", LARGE),
    ("str-join-separator", "{{ ('y' * 2000000).join('x' * 2000) }}", LARGE),
    ("replace-empty", "{{ ('x' * 20000).replace('', 'y' * 2000) }}", LARGE),
    ("replace-filter", "{{ ('x' * 20000)|replace('x', 'y' * 2000) }}", LARGE),
    ("indent-width", "{{ ('x\\n' * 20000)|indent(4000000) }}", LARGE),
    ("indent-text", "{{ ('x\\n' * 20000)|indent('y' * 40000) }}", LARGE),
    ("wordwrap", "{{ ('x ' * 20000)|wordwrap(1, wrapstring='y' * 40000) }}", LARGE),
    ("urlize", "{{ ('www.x.com ' * 100000)|urlize(target='y' * 1000) }}", LARGE),
    ("tojson-indent", "{{ [1, 2, 3]|tojson(indent=4000000) }}", LARGE),
    ("tojson-separators", "{{ range(1000)|list|tojson(separators=('y' * 100000, ':')) }}", LARGE),
    ("tojson-escapes", "{{ ('\\x00' * 4000000)|tojson }}", LARGE),
    ("percent-widths", "{{ ('%-4000000s' * 1000) % (('x',) * 1000) }}", LARGE),
    ("percent-star-widths", "{{ ('%*s' * 1000) % ((4000000, 'x') * 1000) }}", LARGE),
    ("format-filter-widths", "{{ ('%4000000s' * 100)|format(*(['x'] * 100)) }}", LARGE),
    ("brace-widths", "{{ '{a:>4000000}{a:>4000000}'.format(a='x') }}", LARGE),
    ("brace-nested-widths", "{{ ('{:{}}' * 1000).format(*(['x', 4000000] * 1000)) }}", LARGE),
    ("center", "{{ 'x'|center(300000000) }}", LARGE),
    ("sum-of-lists", "{{ ([[0] * 1000] * 100000)|sum(start=[])|length }}", LARGE),
    ("power", "{{ (2 ** 1000) ** 1000 }}", "absurdly large number"),
    ("huge-power", "{{ 7 ** 100000000 }}", "absurdly large number"),
    ("batch", "{{ (" + BIG + ")|batch(1)|list|length }}", LARGE + "|" + TOOK),  # 200,000 lists either way
    ("slice", "{{ ([1] * 1000000)|slice(4000000)|list|length }}", LARGE),
    ("characters-as-list", "{{ (('x' * 4000000)|list)|length }}", LARGE),
    ("escape", "{{ ('&' * 3000000)|e }}", LARGE),
    ("date-format", "{{ strftime_now('%c' * 1000000) }}", "date format"),
    # What the sandbox no longer hands out at all.
    ("lipsum", "{{ lipsum(n=1000000) }}", "lipsum"),
    ("expandtabs", "{{ ('\\t' * 1000).expandtabs(4000000) }}", UNSAFE),
    ("bytes", "{{ 'x'.encode() * 1000000000 }}", UNSAFE),
    ("fromkeys", "{{ dict(a=1).fromkeys(range(100000), 'x' * 1000) }}", UNSAFE),
    ("translate", "{{ ('x' * 100000).translate({120: 'y' * 100000}) }}", UNSAFE),
    # Time: loops that write nothing, and loops inside one expression's worth of work.
    ("silent-loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", TOOK),
    ("macro-literal-loop", "{% macro m() %}{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxx"
     "{% endfor %}{% endfor %}{% endmacro %}{{ m() }}", TOOK),
    ("expression-loop", "{% set ns = namespace(a='') %}{% for i in range(100000) %}{% for j in range(1000) %}"
     "{% set ns.a = ns.a ~ '' %}{% endfor %}{% endfor %}", TOOK),
    ("macro-recursion", "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", NESTED),
    # Source that Jinja's parser or Python's compiler cannot take.
    ("nested-ifs", nested("{% if true %}", "{% endif %}", 100), NESTED),
    ("nested-fors", nested("{% for i in range(1) %}", "{% endfor %}", 25), NESTED),
    ("nested-macros", nested("{% macro m() %}", "{% endmacro %}", MAX_NESTING + 1, ""), NESTED),
    ("nested-set-blocks", nested("{% set x %}", "{% endset %}", MAX_NESTING + 1), NESTED),
    ("nested-filters", nested("{% filter upper %}", "{% endfilter %}", MAX_NESTING + 1), NESTED),
    ("nested-parentheses", "{{ " + nested("(", ")", 500, "1") + " }}", NESTED),
    ("nested-brackets", "{{ " + nested("[", "]", 500, "1") + " }}", NESTED),
    ("nested-dicts", "{{ " + nested('{"a": ', "}", 500, "1") + " }}", NESTED),
    ("long-sum", chain("1", " + 1", 20000), NESTED),
    ("unary-chain", "{{ " + "- " * 5000 + "1 }}", NESTED),
    ("not-chain", "{{ " + "not " * 5000 + "1 }}", NESTED),
    ("filter-chain", chain("x", "|e", 5000), NESTED),
    ("attribute-chain", chain("x", ".a", 5000), NESTED),
    ("subscript-chain", chain("x", "[0]", 5000), NESTED),
    ("call-chain", chain("x", "()", 5000), NESTED),
    ("conditional-chain", "{{ " + " if x else ".join(["1"] * 5000) + " }}", NESTED),
    ("too-long", "x" * (MAX_TEMPLATE_CHARS + 1), "too long"),
    ("duplicate-argument", "{% macro m(a, a) %}{% endmacro %}", "could not be compiled"),
    ("syntax-error", "{% for m in messages %}\n{{ m.content }", "syntax error on line 2"),
    ("include", "{% include 'x' %}", "no loader"),
    ("huge-raise", "{{ raise_exception('<b>no</b>\\n' * 100000) }}",
     "rejected this conversation: <b>no</b> <b>no</b>.*…$"),
    ("escape-attempt", "{{ cycler.__init__.__globals__.os.popen('id').read() }}", UNSAFE),
]

BENIGN = [
    ("ordinary-formatting", "{{ '%s' % 20240601 }} {{ '%d-%d' % (20240601, 3) }} {{ '%*d' % (5, 3) }}",
     "20240601 20240601-3     3"),
    ("numbers", "{{ 7 // 2 }} {{ 7 / 2 }} {{ 7 - 2 }} {{ -7 % 3 }} {{ 2 ** 0.5 }} {{ 1 ** 1000000000 }} {{ 2 ** 100 }}",
     "3 3.5 5 2 1.4142135623730951 1 1267650600228229401496703205376"),
    ("nesting-within-limits",
     "{% if " + nested("(", ")", 30, "true") + " %}"
     + nested("{% if true %}", "{% endif %}", 30, "deep") + "{% endif %}",
     "deep"),
    ("loop-of-many-strings", "{{ range(100000)|map('string')|list|length }}", "100000"),
    ("large-value-within-allowance", "{{ ('x' * 3900000)|tojson|length }}", "3900002"),
    ("sum", "{{ [1, 2, 3]|sum }} {{ [[1], [2, 3]]|sum(start=[]) }} {{ [1.5, 2]|sum(start=1) }}", "6 [1, 2, 3] 4.5"),
    ("join-and-replace", "{{ ['a', 'b']|join(', ') }} {{ 'a-b'.replace('-', '+') }} {{ ', '.join(['c', 'd']) }}",
     "a, b a+b c, d"),
    ("format-map", "{{ '{a:>{w}}|'.format_map({'a': 'x', 'w': 3}) }}{{ '{:{}}|'.format('y', 2) }}", "  x|y |"),
    ("tojson-layout", "{{ {'a': [1]}|tojson(indent=2, separators=(',', ': ')) }}", '{\n  "a": [\n    1\n  ]\n}'),
    ("namespace-accumulation",
     "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.s }}",
     "su"),
    ("raw-block", "{% raw %}" + "{%" * 1000 + "{% endraw %}", "{%" * 1000),
]


# Renders every case in one subprocess: the deadline shortened for the hostile cases, the
# address space capped (a template that still reached gigabytes meets MemoryError there instead
# of this machine's swap), and each case's peak resident memory taken from /proc (VmHWM, reset
# before each case through /proc/self/clear_refs).
_RUNNER = """
import json, re, resource, sys, time
from app.engine.templates import sandbox as template_sandbox
from app.engine.templates.chat_template import ChatTemplate, TemplateError

def memory_mb(field):
    with open("/proc/self/status") as status:
        return int(re.search(field + r":\\s+(\\d+)", status.read()).group(1)) / 1024

cases, conversation = json.load(open(sys.argv[1]))
ChatTemplate("{{ 1 }}").render(conversation)  # everything imported before the cap
headroom = int(sys.argv[2]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (int(memory_mb("VmSize") * 2**20) + headroom, resource.RLIM_INFINITY))
results = {}
for case in cases:
    template_sandbox.MAX_RENDER_SECONDS = case["deadline"]
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    before = memory_mb("VmRSS")
    started = time.monotonic()
    try:
        outcome = {"text": ChatTemplate(case["source"]).render(conversation)}
    except TemplateError as exc:
        outcome = {"error": str(exc)}
    except BaseException as exc:
        outcome = {"escaped": f"{type(exc).__name__}: {exc}"[:300]}
    outcome["seconds"] = time.monotonic() - started
    outcome["peak_mb"] = memory_mb("VmHWM") - before
    results[case["id"]] = outcome
print(json.dumps(results))
"""
ADDRESS_SPACE_HEADROOM_MB = 2048


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict]:
    """Each case's outcome ('text' or 'error', or 'escaped' for anything else), seconds and peak MB."""
    cases = [{"id": name, "source": source, "deadline": TEST_DEADLINE_S} for name, source, _ in HOSTILE]
    cases += [{"id": name, "source": source, "deadline": 2.0} for name, source, _ in BENIGN]
    path = tmp_path_factory.mktemp("templates") / "cases.json"
    path.write_text(json.dumps([cases, CONVERSATION]))
    result = subprocess.run([sys.executable, "-c", _RUNNER, str(path), str(ADDRESS_SPACE_HEADROOM_MB)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("name, expected", [pytest.param(name, e, id=name) for name, _, e in HOSTILE])
def test_a_hostile_template_is_refused_in_one_line_quickly_and_within_memory(corpus, name, expected):
    outcome = corpus[name]
    assert "error" in outcome, outcome
    message = outcome["error"]
    assert re.search(expected, message), message
    assert "\n" not in message and len(message) < 300
    assert outcome["seconds"] < 3 * TEST_DEADLINE_S + 1.0
    assert outcome["peak_mb"] < PEAK_LIMIT_MB


@pytest.mark.parametrize("name, expected", [pytest.param(name, e, id=name) for name, _, e in BENIGN])
def test_a_harmless_template_near_the_limits_still_renders(corpus, name, expected):
    outcome = corpus[name]
    assert outcome.get("text") == expected, outcome
    assert outcome["seconds"] < 2.0 and outcome["peak_mb"] < PEAK_LIMIT_MB


def test_the_corpus_is_large_enough():
    assert len(HOSTILE) >= 40 and len({name for name, _, _ in HOSTILE + BENIGN}) == len(HOSTILE + BENIGN)


# --- Messages longer than a prompt may be ----------------------------------------------------


def test_a_message_longer_than_the_limit_is_called_too_long_not_a_broken_template():
    template = ChatTemplate(fallback_source("chatml"))
    message = "x" * (MAX_MESSAGE_CHARS + 1)
    too_long = r"^The message is too long \(4,000,001 characters; at most 4,000,000\)"
    with pytest.raises(MessageTooLongError, match=too_long):
        template.render([{"role": "user", "content": message}])
    with pytest.raises(MessageTooLongError, match=r"^The system prompt is too long \(4,000,001 characters"):
        template.render([{"role": "system", "content": message}, {"role": "user", "content": "Hi"}])
    with pytest.raises(MessageTooLongError, match=r"^Message 1 of this conversation is too long \(4,000,001"):
        template.render([{"role": "user", "content": message}, {"role": "assistant", "content": "Hello"},
                         {"role": "user", "content": "Hi"}])


def test_a_long_conversation_of_ordinary_messages_renders_in_full():
    """The allowance grows with what the template is given: a conversation longer than the
    template's own limit is the context window's business (older turns are dropped), never a
    'broken template'."""
    turns = [{"role": ("user", "assistant")[i % 2], "content": f"{i} " + "word " * 10_000} for i in range(100)]
    started = time.monotonic()
    template = ChatTemplate(fallback_source("llama3"), "<|begin_of_text|>")
    prompt = template.render(turns + [{"role": "user", "content": "?"}])
    assert len(prompt) > 5_000_000 and prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert time.monotonic() - started < 2.0


def test_hearth_chat_says_the_message_is_too_long(gemma_path, tmp_path):
    message = tmp_path / "message.txt"
    message.write_text("x" * (MAX_MESSAGE_CHARS + 1), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "app", "chat", str(gemma_path), "--message-file", str(message)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "hearth: error: The message is too long (4,000,001 characters; at most 4,000,000). Shorten it")
    assert "Traceback" not in result.stderr and "looks broken" not in result.stderr


def test_the_window_is_told_the_message_is_too_long(gemma_path, qapp, qtbot):
    from app.engine.sampling import SamplingParams
    from app.engine.types import LoadOptions, LocalModel
    from app.owners.bridge import EngineBridge

    bridge = EngineBridge()
    try:
        with qtbot.waitSignal(bridge.modelLoaded, timeout=60_000):
            bridge.load(LocalModel(gemma_path), LoadOptions(n_ctx=512))
        with qtbot.waitSignal(bridge.failed, timeout=30_000) as failed:
            bridge.generate([{"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)}], SamplingParams(max_tokens=4))
        assert failed.args[0].startswith("The message is too long (4,000,001 characters; at most 4,000,000)")
    finally:
        bridge.shutdown()

