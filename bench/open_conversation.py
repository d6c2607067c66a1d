"""Time to show a saved conversation, long and branched against short.

Opening a conversation reads the newest page of its branch shown from the store, builds the
pane's MessageViews (with each message's version and count of versions) and renders them
(Markdown, highlighted code) on the GUI thread, so it must not grow with the history. Both
conversations are real ones in a real SQLite file, written through the store as replies are:
a 10-message one, and one whose branch shown has 200 messages (about 35,000 tokens) with 50
other versions at depths spread over it (edited questions and regenerated replies, each old
version with the two messages that followed it), 350 messages in all. Each open is timed as
the window does it, from `store.recent_messages(cid, MESSAGES_LOADED)` through the window's
own `message_view` to `ChatView.set_messages` and the layout and repaint that follow; medians.
Target: the 200-message branched conversation within 2.0x the 10-message one.

Also timed, as figures rather than targets (a recursive query that walked too far would show):
reading the long one's page and building its views alone; rendering all 200 at once, as Hearth did before paging; `store.show_version` switching between
the two versions of the first message of the branched conversation; and, in a conversation of
100,000 messages on one branch, `store.recent_messages` for its newest and its oldest page and
`store.show_version` each way between two versions of its third message (below one of them,
the whole conversation; below the other, nothing).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/open_conversation.py
Writes bench/results/open_conversation.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402
from view_update import _REPLY  # noqa: E402  (the same model-shaped reply)

from app.engine.types import ReplyStats, ReplyStatus, StopReason  # noqa: E402
from app.store import ConversationStore, StoredMessage  # noqa: E402
from app.ui.chat import paging  # noqa: E402
from app.ui.chat.view import ChatView, MessageView  # noqa: E402
from app.ui.window.main_window import MESSAGES_LOADED, MainWindow  # noqa: E402

ROUNDS = 11
SHORT, LONG, BRANCHES = 10, 200, 50
HUGE = 100_000
TARGET_RATIO = 2.0
MODEL = "bench.gguf"
STATS = ReplyStats(completion_tokens=170, stop_reason=StopReason.END_OF_TURN)
# The window's own MessageView builder, with a stand-in for the one thing it asks the window
# (the model's display name), so the views are built exactly as opening a conversation builds them.
_WINDOW = SimpleNamespace(model_display=SimpleNamespace(model_name=lambda record: record))


def message_view(message: StoredMessage) -> MessageView:
    return MainWindow.message_view(_WINDOW, message)


def _content(role: str, depth: int, version: int) -> str:
    if role == "user":
        return f"Question {depth} (version {version}): how do I read the configuration?"
    return _REPLY.format(n=depth) * 2  # about 170 tokens of prose, a list, code and a table


def _add_reply(store: ConversationStore, conversation_id: int, text: str, replacing: int | None = None) -> int:
    """A reply stored the way ChatSession stores one: streaming, then finished with its stats."""
    streaming = dict(model=MODEL, status=ReplyStatus.STREAMING)
    if replacing is None:
        message_id = store.add_message(conversation_id, "assistant", "", **streaming)
    else:
        message_id = store.add_version(replacing, "", **streaming)
    store.finish_message(message_id, text, STATS, ReplyStatus.COMPLETE)
    return message_id


def _add(store: ConversationStore, conversation_id: int, depth: int, version: int = 1,
         replacing: int | None = None) -> int:
    role = "user" if depth % 2 == 0 else "assistant"
    text = _content(role, depth, version)
    if role == "assistant":
        return _add_reply(store, conversation_id, text, replacing)
    if replacing is None:
        return store.add_message(conversation_id, "user", text)
    return store.add_version(replacing, text)


def stored_conversation(store: ConversationStore, count: int, branches: int) -> int:
    """A conversation whose branch shown has `count` messages; at `branches` depths spread over
    it (questions and replies alike), the branch goes on from a second version, and the first
    keeps the two messages that followed it."""
    conversation_id = store.create_conversation(model=MODEL)
    step = count // branches if branches else 0
    versioned = {i * step + i % 2 for i in range(branches)}
    for depth in range(count):
        message_id = _add(store, conversation_id, depth)
        if depth in versioned:
            _add(store, conversation_id, depth + 1)
            _add(store, conversation_id, depth + 2)
            _add(store, conversation_id, depth, version=2, replacing=message_id)
    return conversation_id


def huge_conversation(store: ConversationStore) -> int:
    """HUGE messages on one branch, imported in one transaction (the store's own import)."""
    stamp = "2025-01-01T00:00:00+00:00"
    messages = [{"parent": i - 1 if i else None, "role": "user" if i % 2 == 0 else "assistant",
                 "content": f"Message {i}: a line about rivers and the sea.", "created_at": stamp,
                 "updated_at": stamp} for i in range(HUGE)]
    return store.import_json({"format": "hearth.conversation", "version": 2, "messages": messages, "conversation": {
        "title": "A hundred thousand", "created_at": stamp, "updated_at": stamp, "current": HUGE - 1}})


def open_time(app: QApplication, view: ChatView, store: ConversationStore, conversation_id: int) -> float:
    """What showing a conversation costs the GUI thread, read to repaint."""
    started = time.perf_counter()
    page = store.recent_messages(conversation_id, MESSAGES_LOADED)
    view.set_messages([message_view(m) for m in page.messages], page.earlier)
    app.processEvents()
    return time.perf_counter() - started


def median_time(call: Callable[[], object], rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def switch_times(store: ConversationStore, first: int, second: int) -> tuple[float, float]:
    """Medians of store.show_version switching to `first`, and back to `second`."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(ROUNDS):
        for message_id, kept in zip((first, second), samples):
            started = time.perf_counter()
            store.show_version(message_id)
            kept.append(time.perf_counter() - started)
    return statistics.median(samples[0]), statistics.median(samples[1])


def main() -> None:
    app = QApplication.instance() or QApplication([])
    view = ChatView()
    view.resize(900, 700)
    view.show()
    app.processEvents()
    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as folder:
        store = ConversationStore(Path(folder) / "conversations.sqlite3")
        short, long = stored_conversation(store, SHORT, 0), stored_conversation(store, LONG, BRANCHES)
        shown = store.messages(long)
        assert len(shown) == LONG and sum(m.versions == 2 for m in shown) == BRANCHES
        open_time(app, view, store, long)  # warm caches (lexers, fonts) before timing
        times: dict[int, list[float]] = {short: [], long: []}
        for _ in range(ROUNDS):
            for conversation_id in (short, long):
                times[conversation_id].append(open_time(app, view, store, conversation_id))
        rendered_at_open = LONG - view.hidden_count()
        page = paging.HISTORY_SHOWN_CHARS
        paging.HISTORY_SHOWN_CHARS = 10**9  # everything at once
        whole = statistics.median(open_time(app, view, store, long) for _ in range(3))
        paging.HISTORY_SHOWN_CHARS = page

        read_long = median_time(lambda: list(map(message_view, store.recent_messages(long, MESSAGES_LOADED).messages)))
        first_shown = shown[0]
        first_other = store.sibling(first_shown.id, -1)
        to_other, to_shown = switch_times(store, first_other, first_shown.id)

        huge = huge_conversation(store)
        newest = median_time(lambda: store.recent_messages(huge, MESSAGES_LOADED))
        oldest = median_time(lambda: store.recent_messages(huge, MESSAGES_LOADED, before=MESSAGES_LOADED))
        assert store.recent_messages(huge, MESSAGES_LOADED, before=MESSAGES_LOADED).messages[0].position == 0
        third = store.recent_messages(huge, 1, before=3).messages[0].id
        other = store.add_version(third, "Message 2, put another way.")
        to_whole, to_new = switch_times(store, third, other)
        store.close()

    medians = {conversation_id: statistics.median(samples) for conversation_id, samples in times.items()}
    result = {
        "rounds": ROUNDS,
        "messages_shown_in_long": LONG,
        "other_versions_in_long": BRANCHES,
        "messages_stored_in_long": LONG + 3 * BRANCHES,
        "tokens_in_long": round(sum(len(m.content) for m in shown) / 4),
        "median_ms_short": medians[short] * 1e3,
        "median_ms_long": medians[long] * 1e3,
        "ratio": medians[long] / medians[short],
        "median_ms_long_read_and_views": read_long * 1e3,
        "messages_rendered_of_long": rendered_at_open,
        "median_ms_long_all_at_once": whole * 1e3,
        "median_ms_show_version_first_message_to_old_version": to_other * 1e3,
        "median_ms_show_version_first_message_back": to_shown * 1e3,
        "huge_messages": HUGE,
        "median_ms_recent_messages_newest_page_huge": newest * 1e3,
        "median_ms_recent_messages_oldest_page_huge": oldest * 1e3,
        "median_ms_show_version_huge_to_whole_branch": to_whole * 1e3,
        "median_ms_show_version_huge_to_short_version": to_new * 1e3,
        "target_ratio": TARGET_RATIO,
    }
    result["pass"] = result["ratio"] <= TARGET_RATIO
    print(f"open {SHORT} messages: {result['median_ms_short']:.0f} ms; open {LONG} messages with {BRANCHES} other "
          f"versions (~{result['tokens_in_long']:,} tokens, {result['messages_stored_in_long']} stored): "
          f"{result['median_ms_long']:.0f} ms; ratio {result['ratio']:.2f} "
          f"(target <= {TARGET_RATIO}: {'PASS' if result['pass'] else 'FAIL'}); of which reading the page and "
          f"building its views {read_long * 1e3:.1f} ms")
    print(f"rendered at open: {rendered_at_open} of {LONG} messages, the rest on request; "
          f"rendering all {LONG} at once takes {whole * 1e3:.0f} ms")
    print(f"show_version at the first message of the branched conversation: to its old version "
          f"{to_other * 1e3:.2f} ms, back to the {LONG}-message branch {to_shown * 1e3:.2f} ms")
    print(f"{HUGE:,} messages on one branch: recent_messages newest page {newest * 1e3:.1f} ms, oldest page "
          f"{oldest * 1e3:.1f} ms; show_version at its third message: to the version with the whole branch "
          f"below it {to_whole * 1e3:.1f} ms, to the one-message version {to_new * 1e3:.2f} ms")
    out = ROOT / "bench" / "results" / "open_conversation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
