"""Saved KV state through the real Engine on the real Gemma 3 270M: a conversation left (another
one answered, the model closed) and come back to evaluates only its new turn, and a state that
cannot be trusted is never used.

Each Engine here is a fresh llama.cpp context, as after a restart; a StateCache folder is the
only thing two of them share (the memory tier is per cache object, so a new StateCache on the
same folder reads from disk, as a new process does). The state saved when the first Engine
closed after its cold reply (`saved`) is made once for the module; a test that reopens it
gets a copy in a folder of its own.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.reply_events import collect

from app.engine.kv.cache import StateCache
from app.engine.llama.generator import Engine
from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions, ReplyStats

N_CTX = 1024
GREEDY = SamplingParams(temperature=0.0, max_tokens=6, seed=1)
NEW_TURN_MOST = 40  # tokens: the new question and the turn markers around it, no more
A, B = 7, 8
STATE_FILE = f"conversation-{A}.kvstate"


def history(turns: int = 4) -> list[dict]:
    """A conversation of about 200 tokens: five times the most a new turn may evaluate."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Question {i}: what do you know about river {i}?"})
        messages.append({"role": "assistant", "content": f"River {i} runs through {i + 2} towns, known "
                                                         "for their bridges, markets, mills and orchards."})
    return messages


FIRST = history() + [{"role": "user", "content": "Which river has the most towns?"}]


def reply(engine: Engine, messages: list[dict], conversation_id: int | None) -> tuple[str, ReplyStats]:
    pieces, stats = collect(engine.stream(messages, GREEDY, conversation_id=conversation_id))
    return "".join(pieces), stats


def ask(messages: list[dict], answer: str, question: str) -> list[dict]:
    return messages + [{"role": "assistant", "content": answer}, {"role": "user", "content": question}]


@dataclass(frozen=True)
class Saved:
    """Conversation A answered cold by an Engine that was then closed (quitting)."""

    answer: str
    cold: ReplyStats
    folder: Path  # what the closed Engine's StateCache left: A's state file, no more

    def next_turn(self) -> list[dict]:
        return ask(FIRST, self.answer, "And which has the fewest?")

    def copy_to(self, folder: Path) -> Path:
        """A's saved state in a folder of the caller's own; the file's path."""
        folder.mkdir()
        return Path(shutil.copy2(self.folder / STATE_FILE, folder / STATE_FILE))


@pytest.fixture(scope="module")
def saved(gemma_path, tmp_path_factory) -> Saved:
    folder = tmp_path_factory.mktemp("saved-states")
    engine = Engine(gemma_path, LoadOptions(n_ctx=N_CTX), states=StateCache(folder))
    try:
        answer, cold = reply(engine, FIRST, A)
    finally:
        engine.close()  # quitting: the state is saved as the next prompt will begin
    return Saved(answer, cold, folder)


@pytest.fixture
def opened(gemma_path, tmp_path):
    """Open Engines on one cache folder (tmp_path/states by default); all closed at the end."""
    engines: list[Engine] = []

    def open_engine(folder=tmp_path / "states", n_ctx: int = N_CTX) -> Engine:
        engines.append(Engine(gemma_path, LoadOptions(n_ctx=n_ctx), states=StateCache(folder)))
        return engines[-1]

    yield open_engine
    for engine in engines:
        engine.close()


def test_a_conversation_reopened_after_a_restart_evaluates_only_its_new_turn(saved, opened, tmp_path):
    assert saved.cold.evaluated_prompt_tokens == saved.cold.prompt_tokens  # cold: the whole conversation was read
    assert sorted(p.name for p in saved.folder.iterdir()) == [STATE_FILE]  # saved on close
    saved.copy_to(tmp_path / "states")

    restarted = opened()
    _, resumed = reply(restarted, saved.next_turn(), A)
    assert resumed.prompt_tokens > saved.cold.prompt_tokens > 4 * NEW_TURN_MOST
    assert 0 < resumed.evaluated_prompt_tokens <= NEW_TURN_MOST


def test_switching_to_another_conversation_and_back_evaluates_only_the_new_turn(opened):
    engine = opened()  # an empty folder: A is answered here, cold
    answer, _ = reply(engine, FIRST, A)
    reply(engine, [{"role": "user", "content": "Hello there, who are you?"}], B)  # A is saved as B begins
    _, back = reply(engine, ask(FIRST, answer, "And which has the fewest?"), A)
    assert back.prompt_tokens > 4 * NEW_TURN_MOST
    assert 0 < back.evaluated_prompt_tokens <= NEW_TURN_MOST


def test_a_served_job_between_two_replies_does_not_cost_the_conversation_its_state(opened):
    engine = opened()
    answer, _ = reply(engine, FIRST, A)
    reply(engine, [{"role": "user", "content": "Say hi."}], None)  # another program's request
    _, back = reply(engine, ask(FIRST, answer, "And which has the fewest?"), A)
    assert back.prompt_tokens > 4 * NEW_TURN_MOST
    assert back.evaluated_prompt_tokens <= NEW_TURN_MOST


def test_a_damaged_state_file_is_ignored_deleted_and_the_reply_still_comes(saved, opened, tmp_path):
    copy = saved.copy_to(tmp_path / "states")
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle of the payload
    copy.write_bytes(bytes(data))

    restarted = opened()
    text, resumed = reply(restarted, saved.next_turn(), A)
    assert resumed.evaluated_prompt_tokens == resumed.prompt_tokens  # read again, cold
    assert text and resumed.error is None
    assert not copy.exists() or copy.read_bytes() != bytes(data)  # deleted (and saved anew on close)


def test_a_state_saved_for_another_context_length_is_not_used(saved, opened, tmp_path):
    saved.copy_to(tmp_path / "states")
    other = opened(n_ctx=N_CTX // 2)
    _, resumed = reply(other, saved.next_turn(), A)
    assert resumed.evaluated_prompt_tokens == resumed.prompt_tokens


def test_a_deleted_conversation_keeps_no_state(saved, opened, tmp_path):
    copy = saved.copy_to(tmp_path / "states")
    engine = opened()
    reply(engine, saved.next_turn(), A)
    engine.keep_state()
    assert copy.read_bytes() != (saved.folder / STATE_FILE).read_bytes()  # saved anew, with the new exchange
    engine.forget_state(A)
    assert not copy.exists()
    engine.close()  # nothing is saved for it on the way out either
    assert not list((tmp_path / "states").iterdir())


def test_opening_a_conversation_restores_its_state_before_the_user_sends(saved, opened, tmp_path):
    # The window's path: ChatSession.open -> Engine.prepare, while the user reads and types.
    saved.copy_to(tmp_path / "states")
    restarted = opened()
    restarted.prepare(A)
    assert restarted._llm.n_tokens > 4 * NEW_TURN_MOST  # the saved tokens are in the context now
    (tmp_path / "states" / STATE_FILE).unlink()  # the Send below cannot be reading the file itself
    _, resumed = reply(restarted, saved.next_turn(), A)
    assert 0 < resumed.evaluated_prompt_tokens <= NEW_TURN_MOST
    restarted.prepare(A)  # opening it again is nothing new: the cache holds it already
    assert restarted._llm.n_tokens >= resumed.prompt_tokens
