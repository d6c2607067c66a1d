"""What every command of the command line shares: the errors that end a command with a status,
the sampling and server flags, and reading the message and the context length asked for.

A leaf: it imports no other module of the command line, so every command may import it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..engine.context import ContextFullError
from ..engine.gguf.modelfile import ModelFileError
from ..engine.options import (
    SAMPLING_FLAGS,
    Overrides,
    context_problem,
    sampling_kind,
)
from ..engine.remote.errors import RemoteError
from ..engine.sampling import PRESETS, Drafting, SamplingError
from ..engine.templates.chat_template import TemplateError
from ..engine.tools.types import ToolsError, ToolUse
from ..engine.tools.wire import tool_use_from_openai
from ..engine.types import ReplyStats, ServerConfig
from ..store import StoreError


class UsageError(ValueError):
    """The command line asks for something that cannot be: exit status 2, as argparse's own."""


USAGE_ERRORS = (UsageError, SamplingError)
USER_ERRORS = (ModelFileError, TemplateError, ContextFullError, RemoteError, StoreError, OSError, ValueError)


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    for name, flag in SAMPLING_FLAGS.items():
        parser.add_argument(flag, dest=name, type=sampling_kind(name))
    parser.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    parser.add_argument("--draft", choices=[d.value for d in Drafting],
                        help="lookup: check guesses copied from the conversation several tokens at a time, "
                             "faster where a reply repeats its input; none: one token at a time "
                             "(default: lookup; with --conversation, the window's setting for the model)")


def add_server_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--server", metavar="URL", required=required,
                        help="an OpenAI-compatible server's address, such as http://127.0.0.1:8080/v1")
    parser.add_argument("--api-key-env", metavar="VAR", help="the environment variable holding the server's API key")


def server_from_args(args) -> ServerConfig:
    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env, "").strip()
        if not key:
            raise UsageError(f"--api-key-env: the environment variable {args.api_key_env} is not set")
    elif args.api_key_env is not None:
        raise UsageError("--api-key-env needs the name of an environment variable")
    try:
        return ServerConfig(args.server, api_key=key)
    except ValueError as exc:
        raise UsageError(f"--server: {exc}") from None


def sampling_overrides(args) -> Overrides:
    """What --preset and the sampling flags given ask for (options.resolve lays it over the
    stored or the model's sampling)."""
    changes: dict[str, object] = {name: getattr(args, name) for name in SAMPLING_FLAGS if getattr(args, name) is not None}
    if args.stop:
        changes["stop"] = tuple(args.stop)
    if args.draft:
        changes["draft"] = Drafting(args.draft)
    return Overrides(preset=PRESETS[args.preset] if args.preset else None, sampling=changes)


def message_text(args) -> str:
    """The message: the argument, standard input for "-", or --message-file (for messages
    longer than the shell lets an argument be)."""
    if (args.message is None) == (args.message_file is None):
        raise UsageError("give the message as an argument, - for standard input, or --message-file FILE")
    if args.message_file is not None:
        return args.message_file.read_text(encoding="utf-8")
    return sys.stdin.read() if args.message == "-" else args.message


def check_context(n_ctx: int | None, model_context: int) -> None:
    """Refuse a context the model was not made for, before llama.cpp tries to allocate it."""
    if n_ctx is not None and (problem := context_problem(n_ctx, model_context)):
        raise UsageError(f"--ctx {problem}")


def report_stats(args, stats: ReplyStats, device: str) -> None:
    """With --stats json, the reply's statistics as one line of JSON on stderr."""
    if args.stats == "json":
        keys = ("prompt_tokens", "evaluated_prompt_tokens", "completion_tokens", "ttft_s", "tokens_per_s",
                "stop_reason")
        print(json.dumps({k: getattr(stats, k) for k in keys} | {"device": device}), file=sys.stderr)


def read_messages(path: Path) -> list[dict]:
    """`hearth prompt --messages FILE`: a JSON list of {"role", "content"} objects, checked. An
    assistant message may carry `tool_calls` instead of text (its content empty or null), and a
    `role: "tool"` message is a call's result (`tool_call_id`, `name`), as OpenAI sends them."""
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and (
        isinstance(m.get("content"), str) or (m.get("content") is None and isinstance(m.get("tool_calls"), list))
    ) for m in data):
        raise ValueError(f'{path} must be a JSON list of {{"role": ..., "content": ...}} objects '
                         '(an assistant message with "tool_calls" may have no content)')
    return data


def read_tools(path: Path) -> list[dict]:
    """`--tools FILE`: OpenAI's `tools` array, each a function with a name, checked."""
    data = _read_json(path)
    if not isinstance(data, list) or not all(
        isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict)
        and isinstance(tool["function"].get("name"), str) for tool in data
    ):
        raise ValueError(f'{path} must be a JSON list of {{"type": "function", "function": {{"name": ..., '
                         '"description": ..., "parameters": {{...}}}}}} objects, as OpenAI\'s "tools"')
    return data


def tool_use_from_args(args) -> ToolUse:
    """`--tools`, `--tool-choice` and `--json-schema`, read and checked as the server reads the
    same fields of a request (engine/tools/wire.py), with the flag at fault named."""
    if args.tool_choice is not None and args.tools is None:
        raise UsageError("--tool-choice goes with --tools")
    tools = read_tools(args.tools) if args.tools is not None else None
    choice = args.tool_choice
    if choice is not None and choice not in ("auto", "none", "required"):
        choice = {"type": "function", "function": {"name": choice}}
    response_format = None
    if args.json_schema is not None:
        schema = _read_json(args.json_schema)
        response_format = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    try:
        return tool_use_from_openai(tools, choice, None, response_format)
    except ToolsError as exc:
        flag = "--json-schema" if (exc.param or "").startswith("response_format") else (
            "--tool-choice" if (exc.param or "").startswith("tool_choice") else "--tools")
        raise UsageError(f"{flag}: {exc}") from None


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
