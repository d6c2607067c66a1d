"""ChildReply read as an event loop reads it (`ready`, never waiting), against a child that answers
out of step: over a real socket pair, the child's side written by the test, its process a real
`sleep` (a misbehaving engine cannot be had from the real one on demand). Ending such a reply
kills the child and waits for it, so the loop leaves that to the reader that may wait (next())."""

from __future__ import annotations

import select
import socket
import subprocess
import threading

from app.engine.process.engine_process import EngineProcess
from app.engine.process.frames import FrameSocket
from app.engine.process.reply import ChildReply
from app.engine.types import StopReason


def test_an_answer_out_of_step_is_left_to_the_reader_that_may_wait():
    ours, theirs = socket.socketpair()
    process = subprocess.Popen(["sleep", "60"], stderr=subprocess.PIPE)
    child = EngineProcess(process, ours)
    child._tail_thread.start()
    writer = FrameSocket(theirs)
    ended = []
    reply = ChildReply(child, ("event", "one"), threading.Event(), None, ended.append)
    try:
        assert next(reply) == "one"
        writer.send("event", " two")
        writer.send("done")  # an answer to no question asked
        select.select([reply.fileno()], [], [], 10)
        assert reply.ready() == [" two"] and reply.waits
        assert process.poll() is None and not ended  # nothing that may wait was done on the loop
        stats = next(reply)
        assert stats.stop_reason is StopReason.INTERRUPTED and "'done'" in stats.error, stats
        assert process.poll() is not None and ended == [stats]
    finally:
        reply.close()
        process.kill()
        process.wait()
        theirs.close()
        ours.close()
