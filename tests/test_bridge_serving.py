"""The bridge as a line for two consumers: the GUI's replies and jobs served to other programs.

Over scripted backends (tests/support/scripted_backend.py), whose replies can be held open until they
are cancelled, so "one runs while the other waits" is a state the test controls rather than a
race. Generation itself, and a served reply equal to the GUI's, are tested on the real model
(tests/test_local_server.py).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats, StopReason
from app.owners.bridge import UNLOADED, EngineBridge
from app.owners.engine_worker import NO_MODEL_SERVED, RAW_TEMPLATE
from app.serve.completions import Job, Refusal, Refused

WAIT_MS = 5_000
PARAMS = SamplingParams(temperature=0.0, max_tokens=20)
GUI = [{"role": "user", "content": "From the window"}]
SERVED = [{"role": "user", "content": "From another program"}]


@pytest.fixture
def bridge(qtbot, scripted_models) -> EngineBridge:
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=WAIT_MS):
        scripted_models.load(Path("/models/gemma.gguf"))
    return scripted_models._bridge


class Heard:
    """A served job's events, as its consumer hears them (on the engine thread)."""

    def __init__(self):
        self.events: list = []

    def __call__(self, event) -> None:
        self.events.append(event)

    @property
    def text(self) -> str:
        return "".join(event for event in self.events if isinstance(event, str))

    @property
    def ended(self) -> bool:
        return bool(self.events) and isinstance(self.events[-1], (ReplyStats, Refused))


def serve_from_a_thread(bridge: EngineBridge, job: Job, heard: Heard):
    """Submit as the server does: from a thread of its own."""
    submitted = []
    thread = threading.Thread(target=lambda: submitted.append(bridge.serve(job, heard)))
    thread.start()
    thread.join()
    return submitted[0]


def test_a_gui_reply_asked_while_a_served_job_runs_waits_for_it_and_keeps_its_own_text(qtbot, bridge, script):
    script.hold = True
    script.replies = ["served words here", "the window's reply"]
    heard = Heard()
    served = serve_from_a_thread(bridge, Job(PARAMS, messages=SERVED), heard)
    qtbot.waitUntil(lambda: heard.events == ["served"], timeout=WAIT_MS)  # running, held after a piece
    began, chunks = [], []
    bridge.replyBegan.connect(lambda: began.append(True))
    bridge.chunk.connect(chunks.append)
    assert bridge.generate(GUI, PARAMS)
    assert bridge.served_pending == 1
    qtbot.wait(100)
    assert began == [] and chunks == []  # in line, not interleaved

    script.hold = False
    with qtbot.waitSignal(bridge.replyFinished, timeout=WAIT_MS) as finished:
        served.cancel()  # its client went away: it ends at its next token
    assert heard.text == "served" and heard.events[-1].stop_reason is StopReason.CANCELLED
    assert began == [True] and finished.args[0] == "the window's reply" == "".join(chunks)
    assert [messages for messages, _ in script.requests] == [SERVED, GUI]
    assert bridge.served_pending == 0


def test_a_served_job_waits_for_the_gui_reply_before_it(qtbot, bridge, script):
    script.hold = True
    script.replies = ["the window's reply", "served words"]
    with qtbot.waitSignal(bridge.replyBegan, timeout=WAIT_MS):
        assert bridge.generate(GUI, PARAMS)
    qtbot.waitUntil(lambda: len(script.requests) == 1, timeout=WAIT_MS)  # held after its first piece
    heard = Heard()
    serve_from_a_thread(bridge, Job(PARAMS, messages=SERVED), heard)
    qtbot.wait(100)
    assert heard.events == []
    script.hold = False
    with qtbot.waitSignal(bridge.replyFinished, timeout=WAIT_MS) as finished:
        bridge.stop()
    assert finished.args[0] == "the" and finished.args[1].stop_reason is StopReason.CANCELLED
    qtbot.waitUntil(lambda: heard.ended, timeout=WAIT_MS)
    assert heard.text == "served words" and heard.events[-1].stop_reason is StopReason.END_OF_TURN


def test_a_waiting_served_job_that_is_cancelled_leaves_the_line_at_once(qtbot, bridge, script):
    script.hold = True
    with qtbot.waitSignal(bridge.replyBegan, timeout=WAIT_MS):
        bridge.generate(GUI, PARAMS)
    heard = Heard()
    served = bridge.serve(Job(PARAMS, messages=SERVED), heard)
    served.cancel()
    assert heard.events == [ReplyStats(stop_reason=StopReason.CANCELLED)]  # said at once, not at its turn
    served.cancel()  # again: nothing more
    with qtbot.waitSignal(bridge.replyFinished, timeout=WAIT_MS):
        bridge.stop()
    qtbot.wait(50)
    assert len(heard.events) == 1 and [messages for messages, _ in script.requests] == [GUI]


def test_a_gui_reply_stopped_while_it_waits_never_reaches_the_model(qtbot, bridge, script):
    script.hold = True
    heard = Heard()
    served = bridge.serve(Job(PARAMS, messages=SERVED), heard)
    qtbot.waitUntil(lambda: bool(heard.events), timeout=WAIT_MS)
    bridge.generate(GUI, PARAMS)
    bridge.stop()
    with qtbot.waitSignal(bridge.replyFinished, timeout=WAIT_MS) as finished:
        served.cancel()
    assert finished.args == ["", ReplyStats(stop_reason=StopReason.CANCELLED)]
    assert [messages for messages, _ in script.requests] == [SERVED]


def test_a_raw_prompt_runs_under_the_raw_template_and_the_guis_override_comes_back(
        qtbot, bridge, script, scripted_models):
    override = "{{ messages[-1]['content'] }} -- the user's own template"
    with qtbot.waitSignal(scripted_models.templateChanged, timeout=WAIT_MS):
        scripted_models.update_settings(scripted_models.settings.with_changes(template_override=override))
    heard = Heard()
    bridge.serve(Job(PARAMS, prompt="Once upon a time"), heard)
    qtbot.waitUntil(lambda: heard.ended, timeout=WAIT_MS)
    assert script.requests[-1][0] == [{"role": "user", "content": "Once upon a time"}]
    assert script.templates == [override, RAW_TEMPLATE]
    heard = Heard()
    bridge.serve(Job(PARAMS, prompt="Twice"), heard)  # still raw: not compiled again
    qtbot.waitUntil(lambda: heard.ended, timeout=WAIT_MS)
    assert script.templates == [override, RAW_TEMPLATE]
    for _ in range(2):  # the window's reply gets its override back, once
        with qtbot.waitSignal(bridge.replyFinished, timeout=WAIT_MS):
            bridge.generate(GUI, PARAMS)
    assert script.templates == [override, RAW_TEMPLATE, override]


def test_a_served_job_that_cannot_start_is_refused_with_its_reason(qtbot, bridge, script):
    script.fail_start = "The template failed: no such variable"
    heard = Heard()
    bridge.serve(Job(PARAMS, messages=SERVED), heard)
    qtbot.waitUntil(lambda: heard.ended, timeout=WAIT_MS)
    assert heard.events == [Refused(Refusal.BAD_REQUEST, "The template failed: no such variable")]


def test_unloading_refuses_the_waiting_jobs_and_stops_the_running_one(qtbot, bridge, script):
    script.hold = True
    running, waiting = Heard(), Heard()
    bridge.serve(Job(PARAMS, messages=SERVED), running)
    qtbot.waitUntil(lambda: bool(running.events), timeout=WAIT_MS)
    bridge.serve(Job(PARAMS, messages=SERVED), waiting)
    with qtbot.waitSignal(bridge.modelUnloaded, timeout=WAIT_MS):
        bridge.unload()
    assert waiting.events == [Refused(Refusal.UNAVAILABLE, UNLOADED)]
    assert running.events[-1].stop_reason is StopReason.CANCELLED
    after = Heard()
    bridge.serve(Job(PARAMS, messages=SERVED), after)
    qtbot.waitUntil(lambda: after.ended, timeout=WAIT_MS)
    assert after.events == [Refused(Refusal.UNAVAILABLE, NO_MODEL_SERVED)]
