"""What the probe process adds to a model's first load, measured in one run.

    .venv/bin/python bench/probe_cost.py [--runs 5] [--model FILE]

A model's first load in the GUI runs a child process that loads it and reads a token
(app/engine/llama/probe.py); later loads of the same file skip it. This times, alternating in one
process with the file in the page cache: a load through `ProbingOpener` with no verdict yet
(the first load) and a plain `open_backend` (every later load, and every load before the probe
existed). Reported: the medians, their difference (the probe's cost in seconds) and ratio.
Results also go to bench/results/probe_cost.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.llama.probe import ProbingOpener  # noqa: E402
from app.engine.opening import open_backend  # noqa: E402
from app.engine.types import LoadOptions, LocalModel  # noqa: E402
from app.owners.paths import default_model  # noqa: E402


def timed_load(opener, source: LocalModel) -> float:
    started = time.perf_counter()
    opener(source, LoadOptions(n_ctx=4096)).close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", type=Path)
    args = parser.parse_args()
    source = LocalModel(args.model or default_model())
    timed_load(open_backend, source)  # into the page cache, so both sides read it warm
    first, later = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            first.append(timed_load(ProbingOpener(Path(scratch) / f"verdicts-{run}.json"), source))
            later.append(timed_load(open_backend, source))
    result = {
        "model": source.path.name,
        "runs": args.runs,
        "first_load_with_probe_s": statistics.median(first),
        "load_without_probe_s": statistics.median(later),
    }
    result["probe_cost_s"] = result["first_load_with_probe_s"] - result["load_without_probe_s"]
    result["ratio"] = result["first_load_with_probe_s"] / result["load_without_probe_s"]
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "probe_cost.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
