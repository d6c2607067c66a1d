"""run_job reads a Backend's stream as the Backend contract says consumers do: up to its
ReplyStats and no further, then closes it, so a generator's `finally` runs at once on the
engine thread (issue #24: work placed after the last event never ran).

The backend here is a stand-in on purpose: what is checked is the consumer's side of the
contract, which a real backend that keeps to the contract cannot show."""

from __future__ import annotations

import threading

from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats, StopReason
from app.serve.completions import Job
from app.serve.run_job import run_job


class RecordingBackend:
    def __init__(self):
        self.after_stats_ran = False
        self.closed = False

    def stream(self, messages, params, cancel, tools, logprobs):
        try:
            yield "Hello"
            yield ReplyStats(stop_reason=StopReason.END_OF_TURN)
            self.after_stats_ran = True  # never reached: consumers stop at the ReplyStats
        finally:
            self.closed = True


def test_run_job_stops_at_the_stats_and_closes_the_stream():
    backend, delivered = RecordingBackend(), []
    end = run_job(backend, Job(SamplingParams(), messages=[{"role": "user", "content": "Hi"}]),
                  threading.Event(), delivered.append, lambda raw: None)
    assert delivered == ["Hello"] and end.stop_reason is StopReason.END_OF_TURN
    assert backend.closed and not backend.after_stats_ran
