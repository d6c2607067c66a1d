"""The command line: `hearth inspect | prompt | chat | models | serve | pull | conversations | tools`.

Everything here speaks to the engine directly, with no Qt. stdout carries only what the
command promises (JSON, the exact prompt, the reply); messages and statistics go to stderr,
so the output can be piped and diffed.

`--server URL` points `chat` and `models` at an OpenAI-compatible server instead of a file.
Its API key comes from an environment variable named by `--api-key-env`, never from an
argument, so it stays out of the shell's history and the process list.

`serve` runs the model as a local OpenAI-compatible server (app/serve/) until Ctrl+C or
SIGTERM; stdout gets one line, the server's base URL, once it is ready.

`conversations list | export | import` and `chat --conversation ID` work on the conversations
the window keeps (app/cli/conversations.py, app/cli/conversation_chat.py). `tools list` shows
the tool servers' (MCP) tools, and `chat --mcp FILE --allow-tool SERVER/TOOL` lets the model
call them (app/cli/tools.py, app/cli/tool_chat.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..engine.gguf.reading import inspect_model
from ..engine.sampling import PRESETS
from ..engine.templates.chat_template import ChatTemplate, template_for
from ..engine.templates.limits import TemplateError
from ..engine.tools.detection import detect_format
from ..engine.tools.tool_prompt import prompt_messages, template_tools
from ..engine.tools.types import Tool, ToolUse
from ..tool_servers.limits import STEP_LIMIT
from .args import UsageError, add_sampling_arguments, add_server_arguments, read_messages, read_tools, server_from_args
from .chat import run_chat
from .load_options import add_load_arguments
from .plan import add_plan_arguments, run_plan
from .serve import run_serve


def add_subcommands(subparsers) -> None:
    inspect = subparsers.add_parser("inspect", help="print a GGUF model's metadata as JSON")
    inspect.add_argument("model", type=Path)
    add_plan_arguments(inspect)
    inspect.set_defaults(run=run_inspect)

    prompt = subparsers.add_parser("prompt", help="print the exact prompt a conversation renders to")
    prompt.add_argument("model", type=Path, nargs="?", help="take the template from this GGUF")
    prompt.add_argument("--template", type=Path, help="a Jinja chat template file instead of a model")
    prompt.add_argument("--bos", default="", help="BOS token text for --template")
    prompt.add_argument("--eos", default="", help="EOS token text for --template")
    prompt.add_argument("--messages", type=Path, required=True, help='JSON list of {"role", "content"}')
    prompt.add_argument("--tools", type=Path, help="JSON: OpenAI's tools array, rendered as the template lays tools out")
    prompt.add_argument("--no-generation-prompt", action="store_true", help="omit the assistant header")
    prompt.set_defaults(run=run_prompt)

    chat = subparsers.add_parser("chat", help="stream a reply to one message, or continue a stored conversation")
    chat.add_argument("first", nargs="?", metavar="MODEL",
                      help="a GGUF file, or with --server the model's id on the server (or give it with --model)")
    chat.add_argument("message", nargs="?", help="the message; - reads it from standard input")
    chat.add_argument("--model", help="the model, as MODEL; then the only argument is the message")
    chat.add_argument("--conversation", type=int, metavar="ID",
                      help="continue this stored conversation (`hearth conversations list`) and store the exchange; "
                           "the model defaults to its last one")
    chat.add_argument("--message-file", type=Path, help="read the message from this file (UTF-8)")
    chat.add_argument("--image", action="append", default=[], type=Path, metavar="FILE",
                      help="an image to send with the message (PNG, JPEG, WebP, GIF, BMP; repeat for more): a local "
                           "model reads it through its projector (--mmproj, or the mmproj-*.gguf beside it)")
    chat.add_argument("--system", help="system prompt (with --conversation: instead of the conversation's)")
    chat.add_argument("--preset", choices=sorted(PRESETS),
                      help="sampling preset (default: Balanced; with --conversation, "
                           "the window's settings for the model)")
    add_sampling_arguments(chat)
    add_load_arguments(chat, leave_out=("n_threads",))  # the window's threads, or one per core
    chat.add_argument("--stats", choices=["json"], help="print the reply's statistics to stderr")
    chat.add_argument("--tools", type=Path, metavar="TOOLS.json",
                      help="OpenAI's tools array: the functions the model may call; each call is printed "
                           'to stdout as one JSON line {"tool_call": {"id", "name", "arguments"}}')
    chat.add_argument("--tool-choice", metavar="auto|none|required|NAME",
                      help="with --tools or tool servers: may call (auto, the default), must not, must call one, "
                           "or must call NAME (SERVER/TOOL where two servers offer NAME); a forced call is "
                           "forced for the first reply only")
    chat.add_argument("--mcp", type=Path, metavar="MCP.json",
                      help='tool servers (MCP), as mcp.json writes them: {"mcpServers": {NAME: {"command", "args", '
                           '"env"} | {"url", "headers"}}}; without it, --allow-tool uses those of Settings → Tools')
    chat.add_argument("--allow-tool", action="append", default=[], metavar="SERVER/TOOL",
                      help="a tool that may run without asking (repeat for more); a call to any other is "
                           "denied without reaching its server, and recorded as denied")
    chat.add_argument("--max-tool-steps", type=int, metavar="N",
                      help=f"replies that may end in tool calls, one after another (default {STEP_LIMIT})")
    chat.add_argument("--tool-timeout", type=float, metavar="S",
                      help="seconds a tool call may take (default: each server's, 60 unless set)")
    chat.add_argument("--json-schema", type=Path, metavar="SCHEMA.json",
                      help="the reply is JSON that satisfies this JSON schema (held to it by a grammar)")
    chat.add_argument("--docs", metavar="NAME",
                      help="answer from collection NAME (hearth docs add): its chunks that answer the message go "
                           "into the prompt as numbered sources, listed after the reply")
    chat.add_argument("--docs-top", type=int, default=5, metavar="K", help="with --docs: how many chunks (default 5)")
    chat.add_argument("--embedding-model", type=Path, metavar="FILE.gguf",
                      help="with --docs: the embedding model the collection was indexed with, if not the default")
    add_server_arguments(chat, required=False)
    chat.set_defaults(run=run_chat)

    serve = subparsers.add_parser("serve", help="serve a model as a local OpenAI-compatible server")
    serve.add_argument("model", type=Path, nargs="?", help="a GGUF file (default: the embedded default model)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8080, help="the port (default 8080; 0 picks a free one)")
    serve.add_argument("--api-key", metavar="KEY", help="require this key of every request (Authorization: Bearer KEY)")
    serve.add_argument("--api-key-env", metavar="VAR",
                       help="take the required key from this environment variable (out of the process list)")
    add_load_arguments(serve)
    serve.add_argument("--allow-image-urls", action="store_true",
                       help="fetch the http and https image addresses requests name (default: only images sent "
                            "in the request, as data: URLs, are read)")
    serve.add_argument("--max-waiting", type=int, default=8, metavar="N",
                       help="requests that may wait for the model; more are answered 429 (default 8)")
    serve.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                       help="let web pages from ORIGIN (scheme://host[:port], as the browser sends it) call the "
                            "server; repeat for more, '*' for every site (default: none)")
    serve.add_argument("--embedding-model", type=Path, metavar="FILE.gguf",
                       help="the model /v1/embeddings serves, by its file name (default: all-MiniLM-L6-v2, "
                            "converted on first use); loaded at its first request")
    serve.set_defaults(run=run_serve)

    models = subparsers.add_parser("models", help="list an OpenAI-compatible server's models as JSON lines")
    add_server_arguments(models, required=True)
    models.set_defaults(run=run_models)

    from .pull import add_pull_arguments, run_pull  # huggingface_hub: only with `pull`

    pull = subparsers.add_parser("pull", help="download a GGUF model from Hugging Face")
    add_pull_arguments(pull)
    pull.set_defaults(run=run_pull)

    from .conversations import add_conversations_parser

    add_conversations_parser(subparsers)

    from .docs import add_docs_parser
    from .tools import add_tools_parser

    add_tools_parser(subparsers)
    add_docs_parser(subparsers)


def run_inspect(args) -> int:
    if args.plan:
        return run_plan(args)
    info = inspect_model(args.model)
    print(json.dumps(dict(info.to_json(), tool_format=_tool_format(info)), indent=2, ensure_ascii=False))
    return 0


def _tool_format(info) -> dict | None:
    """Which call syntax the model's template speaks, and whether the tool list reaches the
    prompt through the template itself or through Hearth's system note (None: the template
    does not compile, so no prompt is made at all)."""
    try:
        fmt = detect_format(template_for(info))
    except TemplateError:
        return None
    return {"name": fmt.name, "native": fmt.native}


def run_prompt(args) -> int:
    messages = read_messages(args.messages)
    if args.template:
        template = ChatTemplate(args.template.read_text(encoding="utf-8"), args.bos, args.eos, name="file")
    elif args.model:
        template = template_for(inspect_model(args.model))
    else:
        raise UsageError("give a MODEL.gguf or --template T.jinja")
    use = ToolUse(tools=tuple(_tool(entry["function"]) for entry in read_tools(args.tools))) if args.tools else ToolUse()
    fmt = detect_format(template)
    if use.tools and not fmt.native:
        print("hearth: note: this chat template does not read a tools list; the tools are in a system note",
              file=sys.stderr)
    text = template.render(prompt_messages(fmt, messages, use), add_generation_prompt=not args.no_generation_prompt,
                           tools=template_tools(fmt, use))
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
    return 0


def _tool(function: dict) -> Tool:
    parameters = function.get("parameters")
    return Tool(function["name"], function.get("description") or "",
                parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}})


def run_models(args) -> int:
    from ..engine.remote.models import list_models

    for model in list_models(server_from_args(args)):
        # ASCII escapes: an id is the server's text, and may hold what a terminal should not get.
        print(json.dumps(model.to_json()), flush=True)
    return 0
