"""The agent loop's state machine in ChatSession and its ToolLoop, at the moments that race: a
Stop that meets a reply already ending in calls, a conversation opened or deleted while a
reply waits for its servers, a store that fails between steps, a server unticked mid-turn, a
model that repeats a call id.

The engine and the supervisor are stand-ins here (FakeBridge, FakeSupervisor), and only here:
these moments are the order in which signals and futures arrive, which a real model and a
real server cannot be made to hit on cue. The whole loop on the real llama.cpp and real MCP
servers is tests/ui_tools/test_agent_loop_window.py's."""
from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QObject, QSettings, Signal

from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, StopReason
from app.owners import chat_session as cs
from app.owners.chat_session import ChatSession
from app.owners.conversation_tools import ConversationTools
from app.owners.tool_servers import ToolServerManager
from app.owners.tool_settings import ToolSettings
from app.store import ConversationStore, StoreError
from app.tool_servers.approval import STOPPED_BEFORE_TEXT
from app.tool_servers.types import ListedTool, ServerConfig, ServerState, ServerStatus, ToolOutcome, Transport


class FakeBridge(QObject):
    promptProgress = Signal(int, int)
    replyBegan = Signal()
    chunk = Signal(str)
    toolCall = Signal(object)
    replyFinished = Signal(str, object)
    failed = Signal(str)
    modelLoaded = Signal(object)

    def __init__(self):
        super().__init__()
        self.generating = False
        self.served_pending = False
        self.requests = []
        self.stops = 0

    def generate(self, messages, params, conversation_id, tools):
        self.requests.append((conversation_id, tools))
        self.generating = True
        return True

    def finish(self, text, stats, calls=()):
        for call in calls:
            self.toolCall.emit(call)
        self.generating = False
        self.replyFinished.emit(text, stats)

    def stop(self):
        self.stops += 1

    def prepare(self, _cid):
        pass

    def forget_state(self, _cid):
        pass


class FakeSupervisor:
    def __init__(self):
        self.calls = []
        self.result_cap_bytes = 1

    def start(self, name):
        pass

    def configure(self, configs):
        pass

    def call(self, server, tool, arguments):
        future = concurrent.futures.Future()
        self.calls.append((server, tool, future))
        return future

    def close(self):
        pass


@pytest.fixture
def rig(qtbot, tmp_path):
    settings = ToolSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    manager = ToolServerManager(settings)
    manager.set_servers([ServerConfig("s1", Transport.STDIO, command="x")])
    supervisor = FakeSupervisor()
    manager._supervisor = supervisor
    tools = ConversationTools(manager, settings)
    store = ConversationStore(tmp_path / "c.sqlite3")
    bridge = FakeBridge()
    models = SimpleNamespace(current=SimpleNamespace(record_name="m.gguf"),
                             settings=SimpleNamespace(system_prompt="", sampling=SamplingParams()))
    session = ChatSession(store, bridge, models, tools)
    busy = []
    session.busyChanged.connect(busy.append)
    yield SimpleNamespace(session=session, bridge=bridge, manager=manager, supervisor=supervisor, tools=tools,
                          store=store, busy=busy)
    store.close()


READY = ServerStatus("s1", ServerState.READY, tools=(ListedTool("s1", "get"),))
CALL = ToolCall(0, "call_1", "get", "{}")


def settle(qapp) -> None:
    for _ in range(20):
        qapp.processEvents()


def test_deleting_the_conversation_while_its_reply_waits_for_servers_stops_it(rig):
    s = rig.session
    s.choose_tool_servers(("s1",))  # IDLE: a send waits for it
    assert s.send("hi")
    conversation = s.conversation_id
    assert s.reply_conversation_id == conversation and s.busy
    s.delete_conversation(conversation)
    rig.manager._on_reported(READY)  # the server comes up
    assert rig.bridge.requests == [] and not s.busy and rig.busy[-1] is False


def test_a_reply_that_waited_gets_the_tools_of_its_own_conversation(rig):
    s = rig.session
    s.choose_tool_servers(("s1",))
    assert s.send("hi")
    a = s.conversation_id
    b = rig.store.create_conversation(model=None, system_prompt="")
    rig.store.set_tool_servers(b, ())
    s.open(b)  # B chose no servers
    rig.manager._on_reported(ServerStatus("s1", ServerState.STARTING))  # A's server not ready yet
    assert rig.bridge.requests == []
    rig.manager._on_reported(READY)
    [(cid, tools)] = rig.bridge.requests
    assert cid == a and [tool.name for tool in tools.tools] == ["get"]


def test_a_store_that_fails_between_steps_ends_the_turn(rig, monkeypatch, qapp):
    s = rig.session
    rig.manager._on_reported(READY)
    s.choose_tool_servers(("s1",))
    rig.manager.allow_always("s1", "get")
    failures = []
    s.storeFailed.connect(failures.append)
    assert s.send("hi")
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [CALL])

    def failing(*args, **kwargs):
        raise StoreError("disk full")

    monkeypatch.setattr(cs, "begin_reply", failing)
    rig.supervisor.calls[-1][2].set_result(ToolOutcome("ok"))
    settle(qapp)
    assert [str(f) for f in failures] == ["disk full"] and rig.busy[-1] is False and not s.busy


def test_a_stop_that_meets_a_reply_ending_in_calls_runs_none_of_them(rig):
    s = rig.session
    rig.manager._on_reported(READY)
    s.choose_tool_servers(("s1",))
    rig.manager.allow_always("s1", "get")
    assert s.send("hi")
    s.stop()  # the worker had already finished: replyFinished is on its way
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [CALL])
    assert rig.supervisor.calls == [] and not s.busy
    result = rig.store.messages(s.conversation_id)[-1].tool_result
    assert result.error and result.content == STOPPED_BEFORE_TEXT


def test_a_server_unticked_mid_turn_offers_no_tools_to_the_next_step(rig, qapp):
    s = rig.session
    rig.manager._on_reported(READY)
    s.choose_tool_servers(("s1",))
    rig.manager.allow_always("s1", "get")
    assert s.send("hi")
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [CALL])
    s.choose_tool_servers(())  # the user unticks the server
    rig.supervisor.calls[-1][2].set_result(ToolOutcome("ok"))
    settle(qapp)
    assert not rig.bridge.requests[-1][1].tools
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [ToolCall(0, "call_2", "get", "{}")])
    assert len(rig.supervisor.calls) == 1 and not s.busy


def test_the_message_a_reply_waits_to_answer_cannot_be_deleted_meanwhile(rig):
    s = rig.session
    s.choose_tool_servers(("s1",))
    assert s.send("first")
    user = rig.store.messages(s.conversation_id)[-1]
    assert s.delete_version(user.id) is None  # the reply belongs to this branch
    rig.manager._on_reported(READY)
    assert [m.role for m in rig.store.messages(s.conversation_id)] == ["user", "assistant"]


def test_a_repeated_call_id_gets_a_card_of_its_own(rig, qtbot, qapp):
    from app.tool_servers.approval import Decision
    from app.ui.chat.composer import Composer
    from app.ui.chat.view import ChatView
    from app.ui.window.tool_calls import ToolCallDisplay

    s = rig.session
    rig.manager._on_reported(READY)
    s.choose_tool_servers(("s1",))
    chat, composer = ChatView(), Composer()
    qtbot.addWidget(chat)
    qtbot.addWidget(composer)
    ToolCallDisplay(s, chat, composer, lambda _cid: None, lambda **_k: None)
    proposed = []
    s.turn.callProposed.connect(lambda p: proposed.append(p.call_id))
    assert s.send("hi")
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [ToolCall(0, "0", "get", "{}")])
    s.turn.decide("0", Decision.ALLOW_ONCE)
    rig.supervisor.calls[-1][2].set_result(ToolOutcome("ok"))
    settle(qapp)
    rig.bridge.finish("", ReplyStats(stop_reason=StopReason.TOOL_CALLS), [ToolCall(0, "0", "get", "{}")])
    assert len(proposed) == 2 and proposed[0] != proposed[1]
    assert [card.state.value for card in chat.tool_cards()] == ["done", "awaiting"]
    s.stop()
    calls = [m.tool_calls[0].id for m in rig.store.messages(s.conversation_id) if m.tool_calls]
    assert len(set(calls)) == 2
