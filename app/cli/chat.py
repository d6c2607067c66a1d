"""`hearth chat MODEL MESSAGE`: one reply, streamed to stdout (with --conversation, a stored
conversation continued: conversation_chat.py)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from ..conversation.sources import sources_list, sources_of, with_sources
from ..engine.gguf.reading import inspect_model
from ..engine.options import NOTHING_STORED, resolve
from ..engine.sampling import ModelDefaults
from ..engine.tools.types import ToolCall
from ..engine.types import ReplyStats, StopReason
from .args import UsageError, check_context, message_text, report_stats, server_from_args, tool_use_from_args
from .tool_chat import CommandLineTools, call_line, command_line_tools, wants_tool_servers


def run_chat(args) -> int:
    _read_chat_positionals(args)
    if args.conversation is not None:
        from .conversation_chat import run_chat_in_conversation

        if args.tools or args.json_schema or args.docs:
            raise UsageError("--tools, --json-schema and --docs make one-off replies; they do not go with --conversation")
        if args.tool_choice is not None and not wants_tool_servers(args):
            raise UsageError("--tool-choice goes with --tools or tool servers (--mcp, --allow-tool)")

        return run_chat_in_conversation(args)
    from ..engine.opening import open_backend
    from ..engine.types import LocalModel, RemoteModel
    from ..library.projectors import with_projector
    from .images import check_projector, read_images, with_images
    from .load_options import (
        chat_overrides,
        check_loadable,
        print_load_notes,
        refuse_load_flags_for_server,
    )

    if args.server is not None:
        refuse_load_flags_for_server(args, ("--draft", args.draft))
        source = RemoteModel(server_from_args(args), args.model)
        model_defaults = ModelDefaults()  # a server's model: Hearth's (no file to read its own from)
    else:
        if args.api_key_env is not None:
            raise UsageError("--api-key-env goes with --server")
        source = LocalModel(Path(args.model))
        info = inspect_model(source.path)
        check_context(args.ctx, info.context_length)
        model_defaults = info.sampling_defaults  # the model author's, over Hearth's
    settings = resolve(NOTHING_STORED, model_defaults, chat_overrides(args))
    options, params = settings.load_options(), settings.sampling
    check_loadable(options)
    images = read_images(args.image)
    if isinstance(source, LocalModel):
        options = with_projector(source.path, options)
        check_projector(images, info.name, options.mmproj)
    messages = ([{"role": "system", "content": args.system}] if args.system else [])
    question = message_text(args)
    sources = sources_of(_sources(args, question))
    messages.append(with_images({"role": "user", "content": with_sources(question, sources)}, images))
    with command_line_tools(args) as servers:
        tools = tool_use_from_args(args) if servers is None else None
        backend = open_backend(source, options)
        print_load_notes(backend.describe())
        device = backend.describe().device.describe()
        try:
            if servers is None:
                stats, _calls = _print_reply(backend.stream(messages, params, threading.Event(), tools=tools))
            else:
                stats = _tool_loop(backend, messages, params, servers)
        finally:
            backend.close()
    if sources:
        print(f"\nSources:\n{sources_list(sources)}", flush=True)
    report_stats(args, stats, device)
    if stats.stop_reason is StopReason.ERROR:
        print(f"hearth: {stats.error}", file=sys.stderr)
        return 1
    return 0


def _sources(args, question: str) -> list:
    """--docs NAME: the collection's chunks that answer the question, for the prompt."""
    if not args.docs:
        if args.embedding_model is not None:
            raise UsageError("--embedding-model goes with --docs")
        return []
    if args.docs_top < 1:
        raise UsageError("--docs-top must be at least 1")
    from .docs import find_sources

    return find_sources(args.docs, question, args.docs_top, args.embedding_model)


def _tool_loop(backend, messages: list[dict], params, tools: CommandLineTools) -> ReplyStats:
    """Reply, answer its calls, reply again, until a reply ends without calls (the last reply is
    asked with no call allowed); the messages grow as a conversation would (nothing is stored:
    see --conversation). Ctrl+C ends the command, as it does a reply."""
    never = threading.Event()
    for step in range(tools.replies):
        text: list[str] = []
        stats, calls = _print_reply(backend.stream(messages, params, never, tools=tools.use(step)), text, tools.written)
        messages.append({"role": "assistant", "content": "".join(text)}
                        | ({"tool_calls": [call.to_openai() for call in calls]} if calls else {}))
        if not calls or stats.stop_reason is not StopReason.TOOL_CALLS:
            return stats
        messages.extend(result.to_openai() for result in tools.answer(calls, step, never))
    return stats


def _print_reply(events, text: list[str] | None = None, written=lambda call: call
                 ) -> tuple[ReplyStats, tuple[ToolCall, ...]]:
    """The reply's text to stdout as it comes, then a newline, as ever; each complete tool
    call as one JSON line of its own (starting a line of its own where text came before it),
    for a script to read, as `written` gives it (an id unique in the loop). Returns the
    statistics and the calls; the text goes to `text`."""
    out = sys.stdout
    at_line_start, ends_with_call = True, False
    calls: list[ToolCall] = []
    for event in events:
        if isinstance(event, str):
            out.write(event)
            if text is not None:
                text.append(event)
            at_line_start, ends_with_call = event.endswith("\n"), False
        elif isinstance(event, ToolCall):
            event = written(event)
            out.write(("" if at_line_start else "\n") + call_line(event) + "\n")
            calls.append(event)
            at_line_start, ends_with_call = True, True
        elif isinstance(event, ReplyStats):
            stats = event
        out.flush()
    if not ends_with_call:
        out.write("\n")
    out.flush()
    return stats, tuple(calls)


def _read_chat_positionals(args) -> None:
    """`hearth chat MODEL MESSAGE`, or with --model or --conversation `hearth chat MESSAGE`:
    the positional arguments are read as the options given say, into args.model and args.message."""
    given = [value for value in (args.first, args.message) if value is not None]
    if args.model is not None or args.conversation is not None:
        if len(given) > 1:
            raise UsageError("with --model or --conversation, the only argument is the message")
        args.message = given[0] if given else None
    elif not given:
        raise UsageError("give a MODEL.gguf (or --model MODEL, or --conversation ID) and the message")
    else:
        args.model, args.message = given[0], (given[1] if len(given) > 1 else None)
