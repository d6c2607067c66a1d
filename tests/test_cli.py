"""The command line, run as a user runs it: `python -m app …` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "2+2?"},
]


def hearth(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(result.stderr.decode())
    return result


@pytest.fixture
def messages_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(CONVERSATION))
    return path


def test_inspect_prints_metadata_json(gemma_path):
    data = json.loads(hearth("inspect", gemma_path).stdout)
    assert data["architecture"] == "gemma3" and data["quantization"] == "Q4_K_M"
    assert data["bos_token"] == {"id": 2, "text": "<bos>"}
    assert {"id": 106, "text": "<end_of_turn>"} in data["end_of_turn_tokens"]
    assert data["has_chat_template"] is False
    assert data["tool_format"] == {"name": "generic", "native": False}  # the gemma fallback reads no tools


def test_inspect_names_the_tool_format_of_the_models_template():
    from support.model_files.tiny_models import ensure_tiny_models

    models = ensure_tiny_models()
    llama = json.loads(hearth("inspect", models["llama-3.1"][0]).stdout)
    phi = json.loads(hearth("inspect", models["phi-4-mini"][0]).stdout)
    assert llama["tool_format"] == {"name": "llama3", "native": True}
    assert phi["tool_format"] == {"name": "phi4-mini", "native": True}


def test_prompt_prints_the_exact_prompt_and_nothing_else(gemma_path, messages_file):
    out = hearth("prompt", gemma_path, "--messages", messages_file).stdout
    assert out == (
        b"<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
        b"<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n"
    )


def test_prompt_from_a_template_file(tmp_path, messages_file):
    families = json.loads((ROOT / "tests" / "data" / "families.json").read_text())
    llama = next(f for f in families if f["family"] == "llama-3.1")
    template = tmp_path / "t.jinja"
    template.write_text(llama["chat_template"])
    out = hearth("prompt", "--template", template, "--bos", "<|begin_of_text|>", "--eos", "<|eot_id|>",
                 "--messages", messages_file).stdout.decode()
    assert out.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
    assert out.endswith("2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")


def test_prompt_with_tools_prints_the_prompt_hugging_face_renders(tmp_path):
    """`hearth prompt --template T --tools TOOLS.json --messages M.json`, a call and its result in
    M.json with the arguments as OpenAI sends them (JSON text): the reference rendering's bytes."""
    families = {f["family"]: f for f in json.loads((ROOT / "tests" / "data" / "families.json").read_text())}
    references = json.loads((ROOT / "tests" / "data" / "reference_renderings.json").read_text(encoding="utf-8"))
    reference = references["tool_renderings"]["llama-3.1"]["tool_call_and_result"]
    messages = json.loads(json.dumps(reference["messages"]))
    call = messages[2]["tool_calls"][0]["function"]
    call["arguments"] = json.dumps(call["arguments"], ensure_ascii=False)
    (tmp_path / "t.jinja").write_text(families["llama-3.1"]["chat_template"], encoding="utf-8")
    (tmp_path / "m.json").write_text(json.dumps(messages), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(references["tools"]), encoding="utf-8")
    out = hearth("prompt", "--template", tmp_path / "t.jinja", "--bos", "<|begin_of_text|>", "--eos", "<|eot_id|>",
                 "--messages", tmp_path / "m.json", "--tools", tmp_path / "tools.json")
    assert out.stdout.decode("utf-8") == reference["text"] and out.stderr == b""


def test_prompt_with_tools_puts_them_in_a_system_note_where_the_template_ignores_them(gemma_path, messages_file,
                                                                                    tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "add", "parameters": {}}}]))
    result = hearth("prompt", gemma_path, "--messages", messages_file, "--tools", tools)
    assert b"does not read a tools list; the tools are in a system note" in result.stderr
    prompt = result.stdout.decode("utf-8")
    assert prompt.startswith("<bos><start_of_turn>user\nBe brief.\n\nYou can call the following tools")
    assert '{"tool_calls": [{"name": "add", "arguments": {}}]}' in prompt and prompt.endswith("<start_of_turn>model\n")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "add"}]))
    refused = hearth("prompt", gemma_path, "--messages", messages_file, "--tools", bad, check=False)
    assert refused.returncode == 1 and b"OpenAI's \"tools\"" in refused.stderr


def test_chat_streams_and_reports_stats(gemma_path):
    result = hearth("chat", gemma_path, "The capital of France is", "--temperature", "0", "--max-tokens", "6",
                    "--seed", "3", "--stats", "json")
    stats = json.loads(result.stderr.decode().strip().splitlines()[-1])
    assert stats["completion_tokens"] == 6 and stats["stop_reason"] == "length"
    assert set(stats) >= {"prompt_tokens", "completion_tokens", "ttft_s", "tokens_per_s", "stop_reason"}
    assert result.stdout.strip()
    again = hearth("chat", gemma_path, "The capital of France is", "--temperature", "0", "--max-tokens", "6")
    assert again.stdout == result.stdout  # greedy is deterministic


def test_chat_stop_string(gemma_path):
    full = hearth("chat", gemma_path, "Count: 1, 2, 3,", "--temperature", "0", "--max-tokens", "12").stdout.decode()
    stop = full.strip()[3:6]
    result = hearth("chat", gemma_path, "Count: 1, 2, 3,", "--temperature", "0", "--max-tokens", "12",
                    "--stop", stop, "--stats", "json")
    assert json.loads(result.stderr.decode().splitlines()[-1])["stop_reason"] == "stop_string"
    assert result.stdout.decode() == full[: full.index(stop)] + "\n"


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (["inspect", "missing.gguf"], "not found", 1),
        # Usage errors exit 2, as argparse's own do.
        (["chat", "{model}", "hi", "--temperature", "9"], "temperature must be", 2),
        (["chat", "{model}", "hi", "--top-p", "0"], "top_p must be above 0", 2),
        (["prompt", "--messages", "{bad}"], "give a MODEL.gguf or --template", 2),
        (["chat", "{model}", "hi", "--ctx", "2"], "--ctx must be between 64 and 32,768", 2),
        (["chat", "{model}", "hi", "--ctx", "-5"], "--ctx must be between", 2),
        (["chat", "{model}", "hi", "--ctx", "1000000000"], "(the model's context length)", 2),
        (["chat", "{model}"], "give the message", 2),
        (["chat", "{model}", "hi", "--message-file", "{bad}"], "give the message", 2),
    ],
)
def test_errors_are_one_clear_line(args, message, status, gemma_path, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    args = [a.format(model=gemma_path, bad=bad) for a in args]
    result = hearth(*args, check=False)
    assert result.returncode == status
    err = result.stderr.decode().strip()
    assert err.startswith("hearth: error:") and message in err and "Traceback" not in err


def test_chat_takes_the_message_from_standard_input_or_a_file(gemma_path, tmp_path):
    greedy = ["--temperature", "0", "--max-tokens", "4"]
    long_message = tmp_path / "message.txt"
    long_message.write_text("The capital of France is", encoding="utf-8")
    chat = [sys.executable, "-m", "app", "chat", str(gemma_path)]
    # The three run side by side: each spends most of its time starting up and loading.
    runs = [
        subprocess.Popen([*chat, "The capital of France is", *greedy], stdout=subprocess.PIPE, cwd=ROOT),
        subprocess.Popen([*chat, "-", *greedy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT),
        subprocess.Popen([*chat, "--message-file", str(long_message), *greedy], stdout=subprocess.PIPE, cwd=ROOT),
    ]
    direct, piped, from_file = (run.communicate(stdin, timeout=300)[0] for run, stdin in
                                zip(runs, (None, b"The capital of France is", None)))
    assert [run.returncode for run in runs] == [0, 0, 0]
    assert direct and piped == direct == from_file


def test_a_reader_that_goes_away_ends_it_quietly_as_a_unix_tool(gemma_path):
    process = subprocess.Popen([sys.executable, "-m", "app", "inspect", str(gemma_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()  # like `| head` having read its fill before hearth writes
    _, err = process.communicate(timeout=60)
    assert process.returncode == 141 and err == b""
