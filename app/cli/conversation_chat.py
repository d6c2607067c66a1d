"""`hearth chat --conversation ID [--model MODEL.gguf] MESSAGE`: one more exchange in a stored
conversation, along its branch shown, stored as the window stores it (app/owners/chat_session.py).

The user's message is stored before the reply starts; the reply is stored at once as
'streaming' (with the model's record name and the sampling parameters), its text saved every
PARTIAL_SAVE_MS while it grows, and finished with the engine's statistics and the status its
stop reason gives. So a process killed mid-reply leaves the reply as far as it got, found
interrupted at the next open. Ctrl+C stops the reply, which is kept as stopped with its text;
a second Ctrl+C, for a reply that does not stop, ends the process at once, as a kill would.

The model: --model (a GGUF file, or with --server the model's id there), else the
conversation's last model when it is a file in Hearth's model folders. Its settings are the
window's for that model (sampling, context, GPU layers, template); --preset and the sampling
flags change them. The system prompt is the conversation's, unless --system gives another
(then kept with the conversation, as the window keeps the one a reply was written with).
--image FILE sends images with the message, stored with it (cli/images.py reads them).

The data folder is held for the whole run (app/cli/conversations.py): while the window or
another such command has it, this refuses, since opening the database would take their
streaming reply for a crashed one; and a window started meanwhile finds Hearth running.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..common.text import printable
from ..conversation.exchange import PARTIAL_SAVE_MS, begin_reply
from ..engine.backend import Backend, ReplyEvent
from ..engine.gguf.modelfile import ModelInfo
from ..engine.gguf.reading import inspect_model
from ..engine.opening import open_backend
from ..engine.options import ModelSettings, StoredSettings, resolve
from ..engine.sampling import ModelDefaults, SamplingParams
from ..engine.tools.types import PLAIN, ToolCall, ToolUse
from ..engine.types import LocalModel, ModelSource, RemoteModel, ReplyStats, StopReason
from ..images.image import Image
from ..library.projectors import with_projector
from ..owners import paths
from ..owners.saved_states import open_state_cache
from ..owners.settings import Settings
from ..store import ConversationStore
from .args import UsageError, check_context, message_text, report_stats, server_from_args
from .conversations import conversation, holding_data_folder
from .images import check_projector, read_images
from .load_options import (
    chat_overrides,
    check_loadable,
    print_load_notes,
    refuse_load_flags_for_server,
)
from .tool_chat import CommandLineTools, call_line, command_line_tools

PARTIAL_SAVE_S = PARTIAL_SAVE_MS / 1000
STOP_WAIT_S = 5.0  # how long a reply is given to end before the model it runs on is freed
INTERRUPTED_STATUS = 130  # the shell's status for a command ended by Ctrl+C


@dataclass(frozen=True)
class _Reply:
    """How the reply ended: its text and statistics as stored, whether Ctrl+C stopped it, and
    whether standard output's reader went away before its end (it was stored whole)."""

    text: str
    stats: ReplyStats
    stopped: bool
    reader_left: bool
    calls: tuple[ToolCall, ...] = ()


def run_chat_in_conversation(args) -> int:
    """`hearth chat --conversation`: the reply on stdout, statistics on stderr as `hearth chat`
    prints them; exit 0, 1 for a reply that failed, 130 for one Ctrl+C stopped."""
    text = message_text(args).strip()
    if not text:
        raise UsageError("the message is empty")
    images = read_images(args.image)
    with holding_data_folder(", or continue the conversation in its window"):
        # Ours alone while held: a 'streaming' reply in it was cut off, and is marked so.
        with ConversationStore(paths.database_path()) as store:
            stored = conversation(store, args.conversation)
            settings = Settings.for_profile()
            source = _model(args, stored.id, stored.model, settings)
            info = inspect_model(source.path) if isinstance(source, LocalModel) else None  # once: a header walk
            model_settings = _settings(args, info, settings.stored_settings(source.settings_key))
            params, options = model_settings.sampling, model_settings.load_options()
            if info is not None:
                options = with_projector(source.path, options)
                check_projector(images, info.name, options.mmproj)
            backend = open_backend(source, options, states=open_state_cache(settings))
            print_load_notes(backend.describe())
            try:  # loaded before anything is stored: a model that fails to load adds nothing
                system_prompt = stored.system_prompt if args.system is None else args.system
                with command_line_tools(args) as tools:
                    reply = _converse(store, stored.id, text, images, system_prompt, backend, params, tools)
                device = backend.describe().device.describe()
            finally:
                backend.close()  # saves the conversation's KV state: the next call starts warm
    report_stats(args, reply.stats, device)
    if reply.stats.stop_reason is StopReason.ERROR:
        print(f"hearth: {reply.stats.error}", file=sys.stderr)
        return 1
    if reply.reader_left:
        raise BrokenPipeError  # __main__ ends as a Unix tool does when its reader has gone
    return INTERRUPTED_STATUS if reply.stopped else 0


def _model(args, conversation_id: int, last_model: str | None, settings: Settings) -> ModelSource:
    """--model (with --server, the model's id there), else the conversation's last model when
    it is a file in Hearth's model folders."""
    if args.server is not None:
        if args.model is None:
            raise UsageError("with --server, give the model's id on the server with --model")
        return RemoteModel(server_from_args(args), args.model)
    if args.api_key_env is not None:
        raise UsageError("--api-key-env goes with --server")
    if args.model is not None:
        return LocalModel(Path(args.model))
    path = find_model_file(last_model, settings) if last_model else None
    if path is None:
        reason = (f"was last answered by {printable(last_model)}, which is not a model file in Hearth's model folders"
                  if last_model else "has no model recorded")
        raise ValueError(f"conversation {conversation_id} {reason}: pass --model MODEL.gguf")
    return LocalModel(path)


def find_model_file(name: str, settings: Settings) -> Path | None:
    """The usable model file named `name` (the name a conversation records) among those the
    window's model list shows: its folders, the files the user added, the model used last."""
    from ..library import scan  # only when a model is looked for: it reads the files' headers

    homes = paths.model_homes()
    last = settings.last_source
    files = [*settings.extra_files, *([last.path] if isinstance(last, LocalModel) else [])]
    return next((entry.path for entry in scan.scan(scan.model_folders(homes, settings.extra_folders), files, homes)
                 if entry.usable and entry.path.name == name), None)


def _settings(args, info: ModelInfo | None, stored: StoredSettings) -> ModelSettings:
    """The window's settings for the model (`info`: its file's header; None for a server's
    model, which takes no load flags), its author's sampling defaults and the flags given,
    merged as options.resolve merges them for every command."""
    if info is None:
        refuse_load_flags_for_server(args)
        return resolve(stored, ModelDefaults(), chat_overrides(args))
    check_context(args.ctx, info.context_length)
    settings = resolve(stored, info.sampling_defaults, chat_overrides(args))
    check_loadable(settings.load_options())
    return settings


def _converse(store: ConversationStore, conversation_id: int, text: str, images: tuple[Image, ...],
              system_prompt: str, backend: Backend, params: SamplingParams, tools: CommandLineTools | None) -> _Reply:
    """Store the message (with its images) and the reply as ChatSession.send does
    (app/conversation/exchange.py): the message, then the reply begun, saved while it grows and finished. With tools, a reply
    that ends in calls has their results stored after it, and the next reply begins below
    them, as the window's turn goes (owners/chat_session.py)."""
    cancel = threading.Event()
    with _ctrl_c_stops(cancel):
        store.add_message(conversation_id, "user", text, images=images)
        for step in range(tools.replies if tools is not None else 1):
            stored = begin_reply(store, conversation_id, system_prompt, backend.describe().record_name, params)
            use = tools.use(step) if tools is not None else PLAIN
            reply = _stream(backend, stored.messages, params, conversation_id, cancel, stored.save_partial, use,
                            tools.written if tools is not None else None)
            stored.finish(reply.text, reply.stats, tool_calls=reply.calls)
            if not reply.calls:
                break
            halted = cancel
            if reply.stats.stop_reason is not StopReason.TOOL_CALLS:  # cut off mid-call: its calls are not run
                halted = threading.Event()
                halted.set()
            for result in tools.answer(reply.calls, step, halted):
                store.add_tool_result(conversation_id, result)  # each as it comes: a kill loses none
            if halted.is_set():
                break
    return reply


@contextmanager
def _ctrl_c_stops(cancel: threading.Event) -> Iterator[None]:
    """While the exchange is stored, Ctrl+C sets `cancel` (the reply stops, and is kept as
    stopped) instead of interrupting a write; a second one ends the process at once, as a kill
    would, for a reply that does not stop: the last partial save is found interrupted."""

    def stop(_signum, _frame) -> None:
        if cancel.is_set():
            sys.stdout.flush()
            os._exit(INTERRUPTED_STATUS)
        cancel.set()

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stream(backend: Backend, messages: list[dict], params: SamplingParams, conversation_id: int,
            cancel: threading.Event, save_partial: Callable[[str], None], tools: ToolUse = PLAIN,
            written: Callable[[ToolCall], ToolCall] | None = None) -> _Reply:
    """The reply, printed as it comes and saved (`save_partial(text so far)`, which writes only
    what grew) every PARTIAL_SAVE_S. It is generated on a thread of its own, so that saving
    keeps time while the model is silent. A reply that could not start ends with
    ReplyStats.failed and no text, as the window keeps one."""
    events: queue.SimpleQueue[ReplyEvent | Exception] = queue.SimpleQueue()

    def produce() -> None:
        try:
            for event in backend.stream(messages, params, cancel, conversation_id=conversation_id, tools=tools):
                events.put(event)
        except Exception as exc:  # raised before the first piece: a template, a full context, a refusal
            events.put(exc)

    output = _Output()
    pieces: list[str] = []
    calls: list[ToolCall] = []
    worker = threading.Thread(target=produce, name="reply", daemon=True)
    worker.start()
    try:
        next_save = time.monotonic() + PARTIAL_SAVE_S
        while True:
            try:
                event = events.get(timeout=max(0.0, next_save - time.monotonic()))
            except queue.Empty:
                event = None
            if isinstance(event, Exception):
                return _Reply("", ReplyStats.failed(str(event)), cancel.is_set(), output.reader_left)
            if isinstance(event, ReplyStats):
                output.write("\n")
                return _Reply("".join(pieces), event, cancel.is_set(), output.reader_left, tuple(calls))
            if isinstance(event, ToolCall):
                event = written(event) if written is not None else event
                calls.append(event)
                output.write(("\n" if pieces and not pieces[-1].endswith("\n") else "") + call_line(event) + "\n")
            elif isinstance(event, str):
                pieces.append(event)
                output.write(event)
            if time.monotonic() >= next_save:
                save_partial("".join(pieces))
                next_save = time.monotonic() + PARTIAL_SAVE_S
    except BaseException:
        cancel.set()  # a save failed: the reply stops before the caller frees the model it runs on
        raise
    finally:
        worker.join(STOP_WAIT_S)


class _Output:
    """Standard output, until its reader goes away (`| head`): then the reply still runs to its
    end and is stored whole, and only the printing stops."""

    def __init__(self):
        self.reader_left = False

    def write(self, text: str) -> None:
        if self.reader_left:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            self.reader_left = True
