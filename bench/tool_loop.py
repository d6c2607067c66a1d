"""What the agent loop adds around a tool call in the window, in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/tool_loop.py [--turns 5] [--steps 8]

The path users take: the main window (tests/support/window_stack.py), its ChatSession over the
engine thread with the real llama.cpp, and a real MCP server over stdio started by the
application's ToolServerManager. The model is the suite's scripted Qwen3 model (one layer, set
by hand: its greedy reply to anything is the call `get_weather {"city": "Paris"}`), so each
reply is a call and the model's own time is a few milliseconds; the server is
tests/support/mcp_servers/weather.py, which stamps the wall-clock time each call begins and
ends. The tool is always allowed (no card waits for a person), so each turn runs the step
limit's worth of call → result → next reply.

The tool takes --tool-ms (100 ms) of its own. Figures per step, medians over every step of
every turn; the first two are targeted ≤ 50 ms each, and the third is their ratio form:
- call → tool start: from the engine's complete ToolCall (timed on the engine thread, as the
  parser hands it on) to the server's first line in the tool: the rest of the reply (its
  end-of-turn token), the reply stored, the call planned, the supervisor's thread, JSON-RPC
  over the pipe, the server's dispatch.
- result → next token: from the server's last line in the tool to the next reply's first
  token on the GUI thread: the result over the pipe and the SDK's parsing, the result stored,
  the history read again, the reply begun and stored, then the engine's own time to its first
  token (`ReplyStats.ttft_s`: the prompt rendered and read, one token sampled). A call writes
  no text, so the first token is timed as the engine takes the reply up (on its thread) plus
  that ttft; the figure without the engine's part is shown beside it.
- a whole step ÷ the tool's own time: from the complete call to the next reply's first token,
  over the time the server spent in the tool (1.0 would be a loop that costs nothing).
Results also go to bench/results/tool_loop.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from window_waits import Bot  # noqa: E402

TARGET_MS = 50.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--tool-ms", type=float, default=100.0, help="how long the tool itself takes")
    args = parser.parse_args()
    from support.model_files.scripted_models import scripted_models
    from support.tool_window import weather
    from support.window_stack import ModelStack, WindowStack

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp(prefix="hearth-bench-tools-"))
    stamps = folder / "stamps"
    server = weather(args.tool_ms / 1000, stamps)
    stack = ModelStack.start(folder)
    stack.settings.tools.set_servers([server])
    stack.settings.tools.step_limit = args.steps  # then the model is asked to answer, no call allowed
    stack.settings.tools.always_allowed = frozenset({(server.identity, "get_weather")})
    stack.settings.tools.default_choice = ("weather",)
    bot = Bot()
    stack.load(bot, scripted_models()["qwen3"].path, 60_000)
    opened = WindowStack.open(bot, stack, folder, tools=True)
    session = opened.session
    calls_done: list[float] = []  # the engine's complete calls, wall clock, on the engine thread
    began: list[float] = []  # each reply taken up by the engine thread (its stream starts)
    ttfts: list[float] = []  # each reply's time from its stream's start to its first token
    worker = stack.bridge._worker
    direct = Qt.ConnectionType.DirectConnection
    worker.toolCall.connect(lambda _ticket, _call: calls_done.append(time.time()), direct)
    worker.replyBegan.connect(lambda _ticket: began.append(time.time()), direct)
    session.replyFinished.connect(lambda reply: ttfts.append(reply.stats.ttft_s or 0.0))
    session.tools.start_unsettled()
    bot.wait_until(lambda: session.tools.unsettled(session.tools.chosen) == [] and len(session.tools.catalog()) == 1)
    to_tool: list[float] = []
    to_token: list[float] = []
    to_token_less_model: list[float] = []
    step_over_tool: list[float] = []  # (call → next token) ÷ the tool's own time
    for turn in range(args.turns + 1):  # the first turn warms the engine, the server and the caches
        calls_done.clear(), began.clear(), ttfts.clear()
        stamps.write_text("")
        opened.type_and_send(f"Weather, turn {turn}?")
        bot.wait_until(lambda: not session.busy)
        ran = [tuple(map(float, line.split())) for line in stamps.read_text().splitlines()]
        if turn == 0:
            continue
        for step, (tool_began, tool_ended) in enumerate(ran):
            to_tool.append((tool_began - calls_done[step]) * 1000)
            engine_began = began[step + 1] - tool_ended
            to_token.append((engine_began + ttfts[step + 1]) * 1000)
            to_token_less_model.append(engine_began * 1000)
            step_over_tool.append((began[step + 1] + ttfts[step + 1] - calls_done[step]) / (tool_ended - tool_began))
    opened.close_tools()
    opened.window.close()
    stack.shutdown()
    del app
    result = {
        "steps": len(to_tool),
        "call_to_tool_start_ms": statistics.median(to_tool),
        "result_to_next_token_ms": statistics.median(to_token),
        "result_to_next_token_less_model_ms": statistics.median(to_token_less_model),
        "tool_ms": args.tool_ms,
        "step_over_tool": statistics.median(step_over_tool),
        "target_ms": TARGET_MS,
    }
    print(f"{len(to_tool)} steps ({args.turns} turns of {args.steps}), medians:")
    print(f"  call → tool start:     {result['call_to_tool_start_ms']:6.1f} ms (target ≤ {TARGET_MS:.0f})")
    print(f"  result → next token:   {result['result_to_next_token_ms']:6.1f} ms (target ≤ {TARGET_MS:.0f}; "
          f"{result['result_to_next_token_less_model_ms']:.1f} ms of it before the engine takes the reply up, "
          "the rest is the model reading its prompt and sampling)")
    print(f"  a step (call → the next reply's first token) ÷ the tool's own {args.tool_ms:.0f} ms: "
          f"{result['step_over_tool']:.3f}")
    out = ROOT / "bench" / "results" / "tool_loop.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    met = result["call_to_tool_start_ms"] <= TARGET_MS and result["result_to_next_token_ms"] <= TARGET_MS
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
