"""The walls between the rooms (docs/architecture.md), read from the source of every module in
app/: every import statement counts, those deferred into a function included, since a deferred
import still runs.

    common       Qt-free helpers every room may use
    images       images attached to messages: checked on the way in, read back as pixels
    engine       runs models; engine/llama/ is the only package that imports llama_cpp
    store        conversations in SQLite            library   where models come from
    tool_servers MCP servers, supervised on a thread of their own (beside store and library)
    documents    the user's files read, chunked, embedded and searched (beside store and library)
    conversation the rules the window and the command line share about a conversation
    serve        the OpenAI-compatible server
    owners       the QObjects that outlive windows (the only Qt below the front ends)
    cli, ui      the two front ends

A module imports nothing from a room above its own, nor from a front end other than its own;
the rooms below owners import no Qt, directly or through anything they import; there are no
import cycles between modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"

# Rooms, lowest first; rooms of one rank may not import each other.
RANKS: list[tuple[str, ...]] = [
    ("common",),
    ("images",),
    ("engine",),
    ("store", "library", "tool_servers", "documents"),
    ("conversation",),
    ("serve",),
    ("owners",),
    ("cli", "ui"),
    ("__main__",),
]
# The window's own rooms, lowest first: the small parts every view uses; the views of models
# and the dialogs; the chat pane and the parameters panel (which show models); the window
# that holds them; the process around the window.
UI_RANKS: list[tuple[str, ...]] = [
    ("widgets",),
    ("models", "dialogs"),
    ("chat", "parameters"),
    ("window",),
    ("app",),
]
QT_FREE = {"common", "images", "engine", "store", "library", "tool_servers", "documents", "conversation", "serve"}
QT_PACKAGES = ("PySide6", "shiboken6")
LLAMA_ONLY_IN = "app.engine.llama"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def imports_of(module: str) -> set[str]:
    """Every module this module's source imports (app modules by their own name, others by
    their top-level package), wherever in the file the import statement is."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(_resolved(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                target = f"{source}.{alias.name}"
                found.add(target if target in MODULES else _resolved(source))
    return found - {module}


def _resolved(name: str) -> str:
    """The app module a dotted name lives in (its longest known prefix), else its top package."""
    if name.startswith("PySide6."):
        return ".".join(name.split(".")[:2])  # which part of Qt: the command line may use QtCore alone
    if not name.startswith("app"):
        return name.split(".")[0]
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in MODULES:
            return ".".join(parts[:end])
    return name


GRAPH: dict[str, set[str]] = {module: imports_of(module) for module in MODULES}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def rank_of(room: str) -> int:
    return next(index for index, rooms in enumerate(RANKS) if room in rooms)


def app_imports(module: str) -> set[str]:
    return {target for target in GRAPH[module] if target in MODULES}


def test_every_module_lives_in_a_room():
    loose = sorted(module for module in MODULES if module.count(".") == 1 and room_of(module) not in
                   {room for rooms in RANKS for room in rooms} and not module.endswith("__init__"))
    assert not loose, "modules outside every room: " + ", ".join(loose)


MAX_MODULE_LINES = 500  # a module longer than this is doing several jobs
MAX_MODULES_IN_A_FOLDER = 25  # more side by side and the folder no longer shows its rooms
MAX_LOOSE_MODULES = 4  # directly in app/, besides __init__ and __main__


def test_the_tree_stays_readable():
    long = [f"{module} ({lines} lines)" for module, path in MODULES.items()
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES]
    crowded = [f"{folder.relative_to(APP.parent)} ({count} modules)" for folder in {p.parent for p in MODULES.values()}
               if (count := len(list(folder.glob("*.py")))) > MAX_MODULES_IN_A_FOLDER]
    loose = [path.name for path in APP.glob("*.py") if path.name not in ("__init__.py", "__main__.py")]
    assert not long and not crowded and len(loose) <= MAX_LOOSE_MODULES, (long, crowded, loose)


def test_only_engine_llama_imports_llama_cpp():
    offenders = sorted(module for module, targets in GRAPH.items()
                       if "llama_cpp" in targets and not module.startswith(LLAMA_ONLY_IN))
    assert not offenders, "llama_cpp imported outside engine/llama/: " + ", ".join(offenders)


@pytest.mark.parametrize("room", sorted(QT_FREE))
def test_rooms_below_the_owners_import_no_qt_even_through_what_they_import(room):
    def reaches_qt(module: str, seen: set[str]) -> list[str] | None:
        if any(target.split(".")[0] in QT_PACKAGES for target in GRAPH[module]):
            return [module]
        for target in sorted(app_imports(module)):
            if target not in seen:
                seen.add(target)
                path = reaches_qt(target, seen)
                if path:
                    return [module, *path]
        return None

    chains = [chain for module in MODULES if room_of(module) == room
              if (chain := reaches_qt(module, {module}))]
    assert chains == [], "Qt reached through: " + "; ".join(" -> ".join(chain) for chain in chains)


def test_no_module_imports_a_room_above_its_own_or_a_room_beside_it():
    breaches = []
    for module in MODULES:
        room = room_of(module)
        if room is None:
            continue
        for target in app_imports(module):
            other = room_of(target)
            if other is None or other == room:
                continue
            if rank_of(other) >= rank_of(room):
                breaches.append(f"{module} -> {target}")
    assert not breaches, "imports that cross a wall upwards or sideways:\n" + "\n".join(sorted(breaches))


def test_the_windows_rooms_import_none_above_or_beside_them():
    """ui/'s packages are ranked too: without it the window and the chat pane imported each
    other (the welcome took the shortcuts from the window, the window's colours from the chat)."""
    def ui_room(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 3 and parts[1] == "ui" else None

    def ui_rank(room: str) -> int:
        return next(index for index, rooms in enumerate(UI_RANKS) if room in rooms)

    breaches = [f"{module} -> {target}" for module in MODULES if (room := ui_room(module))
                for target in app_imports(module) if (other := ui_room(target)) and other != room
                and ui_rank(other) >= ui_rank(room)]
    assert not breaches, "ui imports that cross a wall upwards or sideways:\n" + "\n".join(sorted(breaches))


def reachable(module: str) -> set[str]:
    """Everything `module` imports, and everything that imports, and so on."""
    seen, todo = set(), [module]
    while todo:
        for target in GRAPH[todo.pop()]:
            if target not in seen:
                seen.add(target)
                if target in MODULES:
                    todo.append(target)
    return seen


def test_the_command_line_loads_no_widgets_and_no_owner_objects():
    """`hearth chat`, `serve`, `conversations` start in a fraction of a second: they may read
    Qt's standard locations, settings file and lock file (QtCore), never the QObject stack the
    window runs on (the bridge, the sessions) nor widgets."""
    allowed_qt = {"PySide6", "PySide6.QtCore"}
    stack = {"app.owners.bridge", "app.owners.chat_session", "app.owners.model_session", "app.owners.downloads",
             "app.owners.remote_servers", "app.owners.local_server", "app.owners.bridge_completions",
             "app.owners.tool_servers", "app.owners.tool_turns", "app.owners.conversation_tools",
             "app.owners.tool_loop"}
    breaches = []
    for module in MODULES:
        if room_of(module) != "cli":
            continue
        reached = reachable(module)
        breaches += [f"{module} -> {target}" for target in sorted(reached)
                     if target in stack or (target.startswith(QT_PACKAGES) and target not in allowed_qt)]
    assert not breaches, "the command line reaches the window's stack:\n" + "\n".join(breaches)


def test_there_are_no_import_cycles():
    """Tarjan's strongly connected components over app's import graph: each must be one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(module: str) -> None:
        index[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        on_stack.add(module)
        for target in app_imports(module):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_wall_reader_sees_deferred_and_relative_imports():
    """The reader itself: a deferred import inside a function, and a relative one, are edges."""
    # cli/serve.py imports the server inside run_serve; __main__ imports cli.args relatively.
    assert "app.serve.server" in GRAPH["app.cli.serve"]
    assert "app.cli.args" in GRAPH["app.__main__"]


# What runs in the window's process and in `hearth serve`'s: llama.cpp runs in the engine's
# process (engine/process/child.py), never here (#29).
OUT_OF_LLAMA = ("app.owners", "app.ui", "app.serve", "app.cli.serve")


def test_the_window_and_the_server_never_load_llama_cpp():
    """Not even through a deferred import: a crash in llama.cpp must cost the engine's process
    alone, so nothing the window or the server imports reaches engine/llama/ or llama_cpp."""
    chains = []
    for module in sorted(MODULES):
        if module.startswith(OUT_OF_LLAMA):
            reached = sorted(target for target in reachable(module)
                             if target.startswith(LLAMA_ONLY_IN) or target == "llama_cpp")
            if reached:
                chains.append(f"{module} reaches {', '.join(reached[:3])}")
    assert not chains, "llama.cpp reachable from the window or the server:\n" + "\n".join(chains[:20])
