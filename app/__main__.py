"""Entry point: `hearth` opens the GUI; `hearth inspect|prompt|chat|pull` are command-line tools."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from .engine.process import CHILD_FLAG


def build_parser() -> argparse.ArgumentParser:
    from .cli.main import add_subcommands

    parser = argparse.ArgumentParser(prog="hearth", description="Chat with local GGUF language models, offline.")
    parser.add_argument("--self-test", action="store_true", help="run the GUI end to end headless and exit 0/1")
    parser.add_argument("--screenshot", metavar="FILE.png", help="with --self-test: save a screenshot")
    parser.add_argument("--model", help="open the GUI on this GGUF file")
    subparsers = parser.add_subparsers(dest="command")
    add_subcommands(subparsers)
    return parser


def _fill_closed_std_fds() -> None:
    """Point closed stdin/stdout/stderr descriptors at /dev/null.

    Started with them closed (a launcher, `hearth >&- 2>&-`), the next file opened — the log —
    would become fd 2, and C-level warnings from Qt and llama.cpp would be written into it.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # takes the lowest free descriptor: this one


def main(argv: list[str] | None = None) -> int:
    _fill_closed_std_fds()
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) == 2 and arguments[0] == CHILD_FLAG and arguments[1].isdigit():
        # Hearth as a model's own process (engine/process/child.py): before the command line's
        # modules (and Qt, which they import) load, so a child starts quicker and smaller.
        from .engine.process.child import run_engine_child

        return run_engine_child(int(arguments[1]))
    from .cli.args import USAGE_ERRORS, USER_ERRORS

    args = build_parser().parse_args(argv)
    if args.self_test:  # before logging starts, so its log goes to the throwaway profile too
        os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-self-test-")
    from .common.logs import setup_logging
    from .owners.paths import log_dir

    setup_logging(log_dir())
    if args.command is None:
        from .ui.app.application import run_gui  # Qt widgets load only for the GUI

        return run_gui(args)
    try:
        return args.run(args)
    except USAGE_ERRORS as exc:
        print(f"hearth: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # an OSError, but not the user's: before USER_ERRORS
        return _reader_went_away()
    except USER_ERRORS as exc:
        print(f"hearth: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _reader_went_away() -> int:
    """stdout's reader closed it (`hearth inspect … | head`): stop quietly, as Unix tools do
    when SIGPIPE ends them, and keep Python from complaining while it flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13  # SIGPIPE's status, as a shell reports a tool it ended


if __name__ == "__main__":
    sys.exit(main())
