"""Resuming a conversation with saved KV state, on the window's path (issues #14 and #24).

    .venv/bin/python bench/resume.py [--model PATH] [--rounds 5]

Every case runs the objects the window runs, as it runs them: a ConversationStore, the
EngineBridge with its engine thread (each model in a process of its own) keeping states
in a StateCache folder, the ModelSession that loads the model with its stored settings, and the
ChatSession whose `open` and `send` the window's list and Send call. Time to first token (TTFT)
is from `send` to the first `replyChunk` on the GUI thread: what a user waits.

A conversation of about 1,500 tokens (a history ending with a reply) is stored, opened, asked a
question (cold) and Hearth quit (the bridge shut down, which saves the open conversation's
state). Then, each in a NEW process over a copy of that database and state folder (a restart):

  turn one   a new conversation's first reply (system prompt + one question), cold: the
             reference TTFT.
  prepared   the conversation opened (its saved state restored while the user reads), then,
             USER_READS_S later, Send.
  at once    opened and Send at once: the state is restored inside the reply's TTFT, as
             `hearth chat --conversation` does.
  cold       the same reply with no saved state (what every restart cost before).

and, in one process, switching A -> B -> A: B is a new conversation's turn one (the
in-process reference), then A's next reply after A was opened again.

Medians over --rounds; one llama.cpp thread by default (--threads). Target (issue #24):
prepared ÷ turn one <= 1.5, and the same for the switch. Also reported: how many prompt tokens
each case evaluated, the state's size on disk per 1,000 tokens, the time quitting took with
the save, and whether the resumed reply equals the one Hearth gives when it was never closed
(`kept`: both turns in one process, the first reply's tokens in the KV cache as generated) and
the cold one. The resumed reply restores exactly the cache `kept` holds; a cold read of the same
text evaluates the reply's tokens in a batch, which llama.cpp rounds differently from one token
at a time, so on a near tie a greedy reply may differ from the cold one (as with prefix reuse).
Results go to bench/results/resume.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_CTX = 4096
HISTORY_EXCHANGES = 15  # about 1,500 tokens on Gemma 3 270M
TARGET_RATIO = 1.5
USER_READS_S = 2.0  # between opening a conversation and Send
GREEDY = dict(temperature=0.0, max_tokens=16, seed=1)
SYSTEM_PROMPT = "You are a helpful assistant."
QUESTION = "Which of these rivers has the most towns?"
NEXT = "And which has the fewest?"
AGAIN = "And which is the longest?"
TURN_ONE = "Question 0: what do you know about the first river?"


class Hearth:
    """The window's owner objects over `folder` (database, settings, states), the model loaded."""

    def __init__(self, model: Path, folder: Path, threads: int | None, keep_states: bool = True):
        from PySide6.QtCore import QSettings

        from app.engine.kv.cache import StateCache
        from app.engine.sampling import SamplingParams
        from app.engine.types import ModelSettings
        from app.owners.bridge import EngineBridge
        from app.owners.chat_session import ChatSession
        from app.owners.model_session import ModelSession
        from app.owners.settings import Settings
        from app.store import ConversationStore

        settings = Settings(QSettings(str(folder / "hearth.ini"), QSettings.IniFormat))
        settings.save_model_settings(model.name, ModelSettings(
            n_ctx=N_CTX, cpu_threads=threads, system_prompt=SYSTEM_PROMPT, sampling=SamplingParams(**GREEDY)))
        self.store = ConversationStore(folder / "conversations.sqlite3")
        self.bridge = EngineBridge(states=StateCache(folder / "kv-state") if keep_states else None)
        self.models = ModelSession(self.bridge, settings)
        self.session = ChatSession(self.store, self.bridge, self.models)
        wait_for(self.models.modelLoaded, lambda: self.models.load(model))

    def send(self, text: str) -> dict:
        """Send, as the window's Send does; TTFT from the call to the first chunk."""
        first: list[float] = []

        def on_chunk(_text: str) -> None:
            if not first:
                first.append(time.perf_counter())

        self.session.replyChunk.connect(on_chunk)
        started = time.perf_counter()
        finished = wait_for(self.session.replyFinished, lambda: self.session.send(text))
        self.session.replyChunk.disconnect(on_chunk)
        stats = finished.stats
        return {"ttft_s": first[0] - started, "engine_ttft_s": stats.ttft_s, "prompt_tokens": stats.prompt_tokens,
                "evaluated": stats.evaluated_prompt_tokens, "text": finished.text}

    def open_and_read(self, conversation_id: int) -> None:
        """Open the conversation (the window's list does this), then read for USER_READS_S."""
        self.session.open(conversation_id)
        pause(USER_READS_S)

    def quit(self) -> float:
        """Shut the engine down as quitting does; how long that took (the state is saved in it)."""
        started = time.perf_counter()
        self.bridge.shutdown(timeout_ms=60_000)
        self.store.close()
        return time.perf_counter() - started


def wait_for(signal, start, timeout_s: float = 300.0):
    """Call `start` and run the event loop until `signal` comes; its first argument."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop, got = QEventLoop(), []

    def on_signal(*args) -> None:
        got.append(args[0] if args else None)
        loop.quit()

    signal.connect(on_signal)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    start()
    if not got:
        loop.exec()
    signal.disconnect(on_signal)
    if not got:
        raise TimeoutError(f"no {signal} within {timeout_s} s")
    return got[0]


def pause(seconds: float) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def store_history(folder: Path) -> int:
    """Conversation A: the system prompt and HISTORY_EXCHANGES exchanges, ending with a reply."""
    from app.store import ConversationStore

    store = ConversationStore(folder / "conversations.sqlite3")
    conversation_id = store.create_conversation(title="Rivers", system_prompt=SYSTEM_PROMPT)
    for index in range(HISTORY_EXCHANGES):
        store.add_message(conversation_id, "user", f"Question {index}: what do you know about river {index} "
                                                   "and the towns along it?")
        store.add_message(conversation_id, "assistant", f"River {index} runs through {index + 2} towns. The first "
                                                        "is known for its bridges, the second for its markets, and "
                                                        "the rest for their mills and orchards. " * 2)
    store.close()
    return conversation_id


def child(model: Path, what: str, folder: Path, conversation: int, threads: int | None) -> dict:
    """One measurement in a process of its own, over its own copy of the folder."""
    from PySide6.QtWidgets import QApplication

    app = QApplication([])  # noqa: F841 - the owners' signals need the event loop
    if what == "first":  # conversation A answered cold, then Hearth quit: the state is saved
        hearth = Hearth(model, folder, threads)
        hearth.session.open(conversation)
        reply = hearth.send(QUESTION)
        return reply | {"quit_s": hearth.quit()}
    if what == "kept":  # Hearth never closed: the same two turns in one process (prefix reuse)
        hearth = Hearth(model, folder, threads)
        hearth.session.open(conversation)
        hearth.send(QUESTION)
        return hearth.send(NEXT)
    if what == "turn-one":
        hearth = Hearth(model, folder, threads)
        hearth.session.new_conversation()
        return hearth.send(TURN_ONE)
    if what == "prepared":
        hearth = Hearth(model, folder, threads)
        hearth.open_and_read(conversation)
        return hearth.send(NEXT)
    if what == "at-once":
        hearth = Hearth(model, folder, threads)
        hearth.session.open(conversation)
        return hearth.send(NEXT)
    if what == "cold":
        hearth = Hearth(model, folder, threads, keep_states=False)
        hearth.session.open(conversation)
        return hearth.send(NEXT)
    if what == "switch":
        hearth = Hearth(model, folder, threads)
        hearth.open_and_read(conversation)
        a = hearth.send(NEXT)
        hearth.session.new_conversation()
        pause(USER_READS_S)
        b = hearth.send(TURN_ONE)
        hearth.open_and_read(conversation)
        return {"a": a, "b_turn_one": b, "a_again": hearth.send(AGAIN)}
    raise ValueError(what)


def run_child(model: Path, what: str, saved: Path, conversation: int, threads: int | None) -> dict:
    """`what` in a new process over a copy of `saved` (a restart that leaves `saved` as it was)."""
    with tempfile.TemporaryDirectory(prefix="hearth-resume-case-") as name:
        folder = Path(name) / "hearth"
        shutil.copytree(saved, folder)
        env = dict(os.environ, PYTHONPATH=str(ROOT), HEARTH_HOME=str(folder / "home"),
                   QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        done = subprocess.run([sys.executable, __file__, "--model", str(model), "--threads", str(threads or 0),
                               "--child", what, str(folder), str(conversation)],
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"case {what} failed:\n{done.stderr[-4000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if what == "first":  # what quitting left is the state every later case starts from
            shutil.rmtree(saved)
            shutil.copytree(folder, saved)
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads (0: the engine's default). One by default: on a shared 2-core "
                             "machine two spinning threads wait on each other whenever anything else runs")
    parser.add_argument("--child", nargs=3, metavar=("WHAT", "FOLDER", "CONVERSATION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    threads = args.threads or None
    if args.child:
        what, folder, conversation = args.child
        print(json.dumps(child(args.model, what, Path(folder), int(conversation), threads)), flush=True)
        os._exit(0)  # no shutdown: the saved state stays as quitting after the first reply left it

    with tempfile.TemporaryDirectory(prefix="hearth-resume-bench-") as name:
        saved = Path(name) / "hearth"
        saved.mkdir()
        conversation = store_history(saved)
        before = Path(name) / "before-first"
        shutil.copytree(saved, before)
        kept = run_child(args.model, "kept", before, conversation, threads)
        first = run_child(args.model, "first", saved, conversation, threads)
        state_files = list((saved / "kv-state").glob("*.kvstate"))
        state_bytes = sum(path.stat().st_size for path in state_files)
        runs: dict[str, list[dict]] = {"turn-one": [], "prepared": [], "at-once": [], "switch": []}
        for _ in range(args.rounds):
            for what in runs:
                runs[what].append(run_child(args.model, what, saved, conversation, threads))
        cold = run_child(args.model, "cold", saved, conversation, threads)

    def median(rows, key="ttft_s"):
        return statistics.median(row[key] for row in rows)

    saved_tokens = cold["prompt_tokens"] - runs["prepared"][0]["evaluated"]
    turn_one, prepared, at_once = median(runs["turn-one"]), median(runs["prepared"]), median(runs["at-once"])
    b_turn_one = median([r["b_turn_one"] for r in runs["switch"]])
    a_again = median([r["a_again"] for r in runs["switch"]])
    result = {
        "model": args.model.name, "n_ctx": N_CTX, "rounds": args.rounds, "threads": args.threads,
        "path": "ChatSession.open/send -> EngineBridge -> engine thread (the window's)",
        "prompt_tokens": cold["prompt_tokens"], "saved_tokens": saved_tokens,
        "state_files_after_quit": len(state_files),
        "evaluated": {"first": first["evaluated"], "turn_one": runs["turn-one"][0]["evaluated"],
                      "prepared": runs["prepared"][0]["evaluated"], "at_once": runs["at-once"][0]["evaluated"],
                      "cold": cold["evaluated"], "switch_a_again": runs["switch"][0]["a_again"]["evaluated"]},
        "ttft_s": {"turn_one": turn_one, "prepared": prepared, "at_once": at_once, "cold": cold["ttft_s"],
                   "switch_b_turn_one": b_turn_one, "switch_a_again": a_again},
        "ratios": {"prepared_vs_turn_one": prepared / turn_one, "at_once_vs_turn_one": at_once / turn_one,
                   "switch_vs_turn_one": a_again / b_turn_one, "cold_vs_turn_one": cold["ttft_s"] / turn_one},
        "state": {"bytes_on_disk": state_bytes, "bytes_per_1k_tokens": state_bytes * 1000 / max(saved_tokens, 1),
                  "quit_with_save_s": first["quit_s"]},
        "target_ratio": TARGET_RATIO,
        "same_reply_as_kept": all(row["text"] == kept["text"] for row in runs["prepared"] + runs["at-once"]),
        "same_reply_as_cold": all(row["text"] == cold["text"] for row in runs["prepared"] + runs["at-once"]),
    }
    out = ROOT / "bench" / "results" / "resume.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("prompt_tokens", "saved_tokens", "evaluated", "ttft_s", "ratios",
                                             "state", "same_reply_as_kept", "same_reply_as_cold")}, indent=2))


if __name__ == "__main__":
    main()
