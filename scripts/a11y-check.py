#!/usr/bin/python3
"""What a screen reader finds in Hearth's window, read out of process through AT-SPI.

Run with the system Python, which has pyatspi (Debian: xvfb dbus-x11 at-spi2-core
python3-pyatspi libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1):

    /usr/bin/python3 scripts/a11y-check.py [--hearth-python .venv/bin/python] [--dialogs]

It starts a private X server (Xvfb), a D-Bus session and the AT-SPI bus, then Hearth on a
throwaway profile with a file that is not a model (so the window is all there is), waits for
Hearth's window on the AT-SPI desktop and walks it (and with --dialogs, Get models, opened
through its menu item's AT-SPI action, as a screen reader user would). Each control a user can
reach (focusable, showing, enabled) is printed as a JSON line with its role, name and path;
then a summary. Exit status: 0 when every such control has a name, 1 when some have none, 2
when the check could not run. Everything it started is stopped before it exits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
WAIT_S = 60
# Content inside views: a cell or an item is read as its text, which may rightly be empty.
CONTENT_ROLES = {"table cell", "list item", "tree item", "column header", "row header", "table row"}
# Containers whose content is not walked: one node each is enough (and a model list or a
# transcript holds hundreds of cells or paragraphs, each a D-Bus round trip).
LEAF_ROLES = {"table", "tree table", "list", "list box", "tree", "text", "entry", "password text",
              "spin button", "combo box", "document text", "document frame", "terminal", "menu bar"}


class CheckFailed(Exception):
    """The check could not run (a program missing, Hearth did not appear)."""


def missing_programs() -> list[str]:
    """What this machine lacks to run the check; empty when it has everything."""
    missing = [name for name in ("Xvfb", "dbus-daemon") if shutil.which(name) is None]
    if not os.access(BUS_LAUNCHER, os.X_OK):
        missing.append(BUS_LAUNCHER)
    try:
        import pyatspi  # noqa: F401
    except ImportError:
        missing.append("pyatspi (python3-pyatspi)")
    return missing


class Session:
    """Xvfb, a D-Bus session and the AT-SPI bus; stopped (only what it started) on exit."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.env = dict(os.environ)

    def __enter__(self) -> "Session":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()

    def _spawn(self, command: list[str], **popen) -> subprocess.Popen:
        process = subprocess.Popen(command, env=self.env, start_new_session=True, **popen)
        self.processes.append(process)
        return process

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        self._spawn(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                    pass_fds=(write_end,), stderr=subprocess.DEVNULL)
        os.close(write_end)
        with os.fdopen(read_end) as display_number:
            number = display_number.readline().strip()
        if not number:
            raise CheckFailed("Xvfb did not start")
        self.env["DISPLAY"] = f":{number}"
        bus = self._spawn(["dbus-daemon", "--session", "--nofork", "--print-address"],
                          stdout=subprocess.PIPE, text=True)
        address = bus.stdout.readline().strip()
        if not address:
            raise CheckFailed("dbus-daemon did not start")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        os.environ["DISPLAY"], os.environ["DBUS_SESSION_BUS_ADDRESS"] = self.env["DISPLAY"], address  # for pyatspi
        self._spawn([BUS_LAUNCHER, "--launch-immediately"], stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.processes.clear()


def start_hearth(session: Session, python: str, home: Path) -> subprocess.Popen:
    """Hearth on the profile in home, its window and accessibility on the session's buses;
    what it writes to stderr goes to home/stderr.txt (quoted if it dies)."""
    not_a_model = home / "not-a-model.gguf"
    not_a_model.write_bytes(b"no weights to load: the window alone is being checked")
    session.env.update(
        HEARTH_HOME=str(home), QT_QPA_PLATFORM="xcb", QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1",
        QT_ACCESSIBILITY="1", HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(home / "no-hf-cache"),
    )
    session.env.pop("HEARTH_APPEARANCE", None)
    return session._spawn([python, "-m", "app", "--model", str(not_a_model)], cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=open(home / "stderr.txt", "w"))


def find_window(pyatspi, title: str, hearth: subprocess.Popen, timeout: float = WAIT_S):
    """Hearth's top-level window called `title`, once it is on the AT-SPI desktop."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if hearth.poll() is not None:
            said = Path(hearth.args[-1]).with_name("stderr.txt").read_text(errors="replace")[-2000:]
            raise CheckFailed(f"Hearth exited ({hearth.returncode}) before its window appeared:\n{said}")
        desktop = pyatspi.Registry.getDesktop(0)
        for app in desktop:
            if app is None:
                continue
            try:
                if app.get_process_id() != hearth.pid:
                    continue
                for window in app:  # Qt adds " — Hearth" to a dialog's title
                    if (window is not None and window.name in (title, f"{title} — Hearth")
                            and _showing(pyatspi, window)):
                        return window
            except Exception:  # an application leaving the bus while it is read
                continue
        time.sleep(0.2)
    raise CheckFailed(f"no window titled {title!r} appeared on the AT-SPI desktop in {timeout} s")


def _showing(pyatspi, node) -> bool:
    return node.getState().contains(pyatspi.STATE_SHOWING)


def reachable_controls(pyatspi, root) -> list[dict]:
    """Every node a user can reach with the keyboard (focusable, showing, enabled), with its
    role, name and path (each step: role[index among its siblings]) from the window. Each page
    of a tab list is shown in turn (through its AT-SPI action), as hidden pages are not walked."""
    found: dict[str, dict] = {}
    tabs = []

    def walk(node, path: list[str]) -> None:
        role = node.getRoleName()
        states = node.getState()
        if path and not states.contains(pyatspi.STATE_SHOWING):
            return
        path = path + [f"{role}[{node.getIndexInParent()}]" if path else role]
        if role == "page tab":
            tabs.append(node)
        if (states.contains(pyatspi.STATE_FOCUSABLE) and states.contains(pyatspi.STATE_SENSITIVE)
                and role not in CONTENT_ROLES):
            where = " / ".join(path)
            found.setdefault(where, {"role": role, "name": (node.name or "").strip(), "id": _identifier(node),
                                     "description": (node.description or "").strip(), "path": where})
        if role in LEAF_ROLES and len(path) > 1:
            return
        for child in node:
            if child is not None:
                walk(child, path)

    walk(root, [])
    for tab in list(tabs):
        if not tab.getState().contains(pyatspi.STATE_SELECTED):
            tab.queryAction().doAction(0)
            time.sleep(0.3)
            walk(root, [])
    return list(found.values())


def _identifier(node) -> str:
    """Qt's accessible identifier (Qt 6.8+: the widget's objectName, else its class, for each
    parent in turn): it tells the widget's owner which one it is."""
    try:
        return node.get_accessible_id() or ""
    except Exception:  # an older AT-SPI without identifiers
        return ""


def open_through_menu(pyatspi, window, item_name: str) -> None:
    """Do the default action of the menu item whose name starts with item_name."""
    def search(node):
        for child in node:
            if child is None:
                continue
            if child.getRoleName() == "menu item" and (child.name or "").startswith(item_name):
                return child
            if child.getRoleName() in ("menu bar", "menu", "popup menu", "menu item"):
                hit = search(child)
                if hit is not None:
                    return hit
        return None

    item = search(window)
    if item is None:
        raise CheckFailed(f"no menu item {item_name!r} in the window")
    item.queryAction().doAction(0)


def check(python: str, dialogs: bool) -> list[dict]:
    import pyatspi

    with tempfile.TemporaryDirectory(prefix="hearth-a11y-") as home, Session() as session:
        hearth = start_hearth(session, python, Path(home))
        window = find_window(pyatspi, "Hearth", hearth)
        time.sleep(0.5)  # the first model scan fills the list
        nodes = [dict(node, window="Hearth") for node in reachable_controls(pyatspi, window)]
        if dialogs:
            open_through_menu(pyatspi, window, "Get models")
            dialog = find_window(pyatspi, "Get models", hearth)
            nodes += [dict(node, window="Get models") for node in reachable_controls(pyatspi, dialog)]
        return nodes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hearth-python", default=str(ROOT / ".venv" / "bin" / "python"),
                        help="the Python that runs Hearth (default: the project's .venv)")
    parser.add_argument("--dialogs", action="store_true", help="also open and walk Get models")
    args = parser.parse_args()
    missing = missing_programs()
    if missing:
        print(f"cannot check: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        nodes = check(args.hearth_python, args.dialogs)
    except CheckFailed as exc:
        print(f"cannot check: {exc}", file=sys.stderr)
        return 2
    for node in nodes:
        print(json.dumps(node, ensure_ascii=False))
    unnamed = [node for node in nodes if not node["name"]]
    print(f"# {len(nodes)} reachable controls, {len(unnamed)} without a name", file=sys.stderr)
    for node in unnamed:
        print(f"#   unnamed {node['role']} in {node['window']}: {node['id'] or node['path']}"
              + (f" (description: {node['description']!r})" if node["description"] else ""), file=sys.stderr)
    return 1 if unnamed else 0


if __name__ == "__main__":
    sys.exit(main())
