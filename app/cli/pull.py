"""`hearth pull OWNER/REPO [--file NAME | --quant Q4_K_M] [--dest DIR]`.

Downloads one model with the same code the GUI uses, drawing a progress bar on stderr and
printing the downloaded path on stdout, so scripts can capture it. Any failure is one line
on stderr and exit status 1. A pull interrupted with Ctrl+C continues where it stopped when
run again. The token comes from Hearth's keyring entry, else HF_TOKEN or `hf auth login`;
there is no --token flag because a token on a command line ends up in shell history.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from app.library.download_progress import DownloadProgress

_BAR_WIDTH = 24
_REDRAW_INTERVAL_S = 0.2


def add_pull_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="OWNER/REPO", help="the Hugging Face repository, e.g. Qwen/Qwen3-0.6B-GGUF")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--file", metavar="NAME", help="the GGUF file to download (any part of a split model)")
    which.add_argument("--quant", metavar="QUANT", help="the quantization to download, e.g. Q4_K_M")
    parser.add_argument("--dest", metavar="DIR", type=Path,
                        help="the folder to download into (default: Hearth's models folder)")


def run_pull(args: argparse.Namespace) -> int:
    # huggingface_hub and keyring load here, not at import: `hearth` builds this parser
    # on every start, and the GUI should not pay for a download it isn't doing.
    from app.common.units import byte_size
    from app.library import credentials
    from app.library.downloads import download_model
    from app.library.errors import HubError
    from app.library.hub import HubClient

    bar = ProgressBar(sys.stderr)
    try:
        client = HubClient(token=credentials.load_token())
        model = client.find_model(args.repo, file=args.file, quant=args.quant)
        dest = args.dest or _default_dest()
        print(f"Downloading {model.name} ({model.quant}, {byte_size(model.size, decimals=1)}) from {model.repo_id} "
              f"into {dest}", file=sys.stderr)
        path = download_model(client, model, dest, on_progress=bar.update)
    except HubError as exc:
        bar.end_line()
        print(f"hearth pull: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        bar.end_line()
        print("hearth pull: interrupted; run the same command again to continue the download.", file=sys.stderr)
        return 1
    bar.end_line()
    print(path)
    return 0


def _default_dest() -> Path:
    from app.owners.paths import user_models_dir  # imports Qt; only needed without --dest

    return user_models_dir()


class ProgressBar:
    """One line redrawn in place: bar, percentage, bytes, speed and time left."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._last_draw = 0.0
        self._width = 0

    def update(self, progress: DownloadProgress) -> None:
        from app.common.units import byte_size

        now = time.monotonic()
        if now - self._last_draw < _REDRAW_INTERVAL_S and progress.bytes_done < progress.bytes_total:
            return
        self._last_draw = now
        filled = int(progress.fraction * _BAR_WIDTH)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        if progress.paused:
            rate = "paused"
        else:
            rate = f"{byte_size(progress.speed, decimals=1)}/s  ETA {_clock(progress.eta_seconds)}"
        line = (f"[{bar}] {progress.fraction:4.0%}  {byte_size(progress.bytes_done, decimals=1)} / "
                f"{byte_size(progress.bytes_total, decimals=1)}  {rate}")
        self._stream.write("\r" + line.ljust(self._width))
        self._width = len(line)
        self._stream.flush()

    def end_line(self) -> None:
        """Move below the bar, if one was drawn."""
        if self._width:
            self._stream.write("\n")
            self._stream.flush()
            self._width = 0


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hearth pull", description="Download a GGUF model from Hugging Face.")
    add_pull_arguments(parser)
    return run_pull(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
