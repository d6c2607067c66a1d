"""`hearth chat MODEL --mcp FILE --allow-tool SERVER/TOOL`, and with --conversation, run as a user
runs them: the real llama.cpp on the scripted Qwen3 model (its reply is always the call
`get_weather {"city": "Paris"}`) and the real MCP server it reaches (support/mcp_servers/weather.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support.model_files.scripted_models import scripted_models
from test_cli_tools_list import hearth

from app.store import ConversationStore
from app.tool_servers.approval import NOT_ALLOWED_TEXT
from app.tool_servers.config import to_mcp_json
from app.tool_servers.types import ServerConfig, Transport

DATABASE = "conversations.sqlite3"
WEATHER = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "weather.py"


def mcp_file(tmp_path: Path, stamps: Path | None = None) -> Path:
    env = (("WEATHER_STAMPS", str(stamps)),) if stamps else ()
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(to_mcp_json([ServerConfig("weather", Transport.STDIO, sys.executable, (str(WEATHER),),
                                                         env=env)])))
    return path


def lines(out) -> list[dict]:
    """The call and result lines (the last reply, asked with no call allowed, is the scripted
    model's call written out as text)."""
    return [line for line in (json.loads(text) for text in out.stdout.decode().splitlines() if text.startswith("{"))
            if "tool_call" in line or "tool_result" in line]


def test_an_allowed_tool_runs_and_the_loop_stops_at_the_step_limit(tmp_path):
    stamps = tmp_path / "stamps"
    out = hearth("chat", scripted_models()["qwen3"].path, "Weather in Paris?", "--mcp", mcp_file(tmp_path, stamps),
                 "--allow-tool", "weather/get_weather", "--max-tool-steps", "2", "--temperature", "0")
    assert out.returncode == 0, out.stderr.decode()
    said = lines(out)
    assert [next(iter(line)) for line in said] == ["tool_call", "tool_result"] * 2
    first, second = said[1]["tool_result"], said[3]["tool_result"]
    assert first == {"id": said[0]["tool_call"]["id"], "name": "get_weather", "content": "Sunny in Paris, 21 °C.",
                     "error": False}
    assert second["content"] == first["content"] and said[2]["tool_call"]["id"] != said[0]["tool_call"]["id"]
    assert len(stamps.read_text().splitlines()) == 2  # the server ran both steps' calls
    assert "used its 2 tool steps" in out.stderr.decode()


def test_a_tool_not_allowed_never_reaches_its_server(tmp_path):
    stamps = tmp_path / "stamps"
    out = hearth("chat", scripted_models()["qwen3"].path, "Weather?", "--mcp", mcp_file(tmp_path, stamps),
                 "--max-tool-steps", "1", "--temperature", "0")
    assert out.returncode == 0, out.stderr.decode()
    results = [line["tool_result"] for line in lines(out) if "tool_result" in line]
    assert results and all(result["error"] for result in results)
    assert not stamps.exists()


def test_with_a_conversation_calls_and_results_are_stored_and_a_call_not_allowed_is_denied(tmp_path):
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    model = scripted_models()["qwen3"].path
    with ConversationStore(home / "data" / DATABASE) as store:
        cid = store.create_conversation(title="weather")
    out = hearth("chat", "--conversation", cid, "--model", model, "Weather?", "--mcp", mcp_file(tmp_path),
                 "--allow-tool", "weather/get_weather", "--max-tool-steps", "2", home=home)
    assert out.returncode == 0, out.stderr.decode()
    out = hearth("chat", "--conversation", cid, "--model", model, "Again?", "--mcp", mcp_file(tmp_path),
                 "--max-tool-steps", "2", home=home)  # nothing allowed this time
    assert out.returncode == 0, out.stderr.decode()
    with ConversationStore(home / "data" / DATABASE) as store:
        shown = [(m.role, m.content if m.role != "assistant" else ",".join(c.name for c in m.tool_calls))
                 for m in store.messages(cid)]
    assert shown == [
        ("user", "Weather?"),
        ("assistant", "get_weather"), ("tool", "Sunny in Paris, 21 °C."),
        ("assistant", "get_weather"), ("tool", "Sunny in Paris, 21 °C."),
        ("assistant", ""),  # asked to answer: no call allowed
        ("user", "Again?"),
        ("assistant", "get_weather"), ("tool", NOT_ALLOWED_TEXT),
        ("assistant", "get_weather"), ("tool", NOT_ALLOWED_TEXT),
        ("assistant", ""),
    ]
