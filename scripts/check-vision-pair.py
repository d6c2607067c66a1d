"""Check a real vision pair (a GGUF model and its mmproj projector) end to end through `hearth
chat`, the path a user takes, on a machine that has one: this project's machines have none, so
the suite runs the same path on a tiny pair with random weights, which can show where an image
goes but not that a model understands it.

    .venv/bin/python scripts/check-vision-pair.py MODEL.gguf [--mmproj MMPROJ.gguf] [--gpu-layers N]

For example, Gemma 3 4B from ggml-org/gemma-3-4b-it-GGUF (`hearth pull` downloads the projector
with it): `gemma-3-4b-it-Q4_K_M.gguf` with `mmproj-model-f16.gguf` beside it.

Each check draws an image whose answer is not in the question (a colour, a shape, a word), asks
about it greedily, and looks for the expected word in the reply; then asks a second question
about the same image in the same conversation (`hearth chat --conversation`), which must reuse
the image from the KV cache: its time to first token is printed beside the first's. Exit 0 when
every check passed. Hearth's data goes to a temporary HEARTH_HOME, so nothing of yours changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[1]
QUESTION_SUFFIX = " Answer with one word."


def colour(rgb: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (512, 384), rgb)


def shape() -> Image.Image:
    picture = Image.new("RGB", (512, 512), "white")
    ImageDraw.Draw(picture).ellipse((96, 96, 416, 416), fill="black")
    return picture


def word(text: str) -> Image.Image:
    picture = Image.new("RGB", (768, 256), "white")
    font = ImageFont.load_default(size=120)
    ImageDraw.Draw(picture).text((40, 60), text, fill="black", font=font)
    return picture


CHECKS = (
    ("red square", colour((220, 30, 30)), "What is the main colour of this image?", ("red",)),
    ("blue square", colour((30, 60, 220)), "What is the main colour of this image?", ("blue",)),
    ("circle", shape(), "What shape is drawn in this image?", ("circle", "round", "dot", "disc", "disk")),
    ("word", word("LANTERN"), "What word is written in this image?", ("lantern",)),
)


def hearth(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HEARTH_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--mmproj", type=Path, help="the projector (default: the one beside the model)")
    parser.add_argument("--gpu-layers", type=int)
    args = parser.parse_args()
    load = (["--mmproj", str(args.mmproj)] if args.mmproj else []) + (
        ["--gpu-layers", str(args.gpu_layers)] if args.gpu_layers is not None else [])
    greedy = ["--temperature", "0", "--max-tokens", "24", "--stats", "json"]
    passed = 0
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        for index, (name, picture, question, expected) in enumerate(CHECKS):
            image = home / f"check-{index}.png"
            picture.save(image)
            first = hearth(home, "chat", str(args.model), question + QUESTION_SUFFIX, "--image", str(image),
                           *load, *greedy)
            if first.returncode != 0:
                print(f"{name}: hearth chat failed ({first.returncode}):\n{first.stderr}")
                return 2
            answer = first.stdout.strip()
            ok = any(word in answer.lower() for word in expected)
            passed += ok
            stats = _stats(first.stderr)
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {answer!r}  (expected {' or '.join(expected)}; "
                  f"{stats.get('prompt_tokens')} prompt tokens, first token in {stats.get('ttft_s', 0):.2f} s)")
        _second_turn(home, args.model, load, greedy)
    print(f"{passed} of {len(CHECKS)} checks passed")
    return 0 if passed == len(CHECKS) else 1


def _second_turn(home: Path, model: Path, load: list[str], greedy: list[str]) -> None:
    """A stored conversation: the image asked about once, then again; the second question's
    time to first token, against the first's, shows the image was not read again."""
    image = home / "check-second.png"
    colour((30, 160, 60)).save(image)
    conversation = str(_new_conversation(home))
    turns = []
    for question, extra in (("What is the main colour of this image?", ["--image", str(image)]),
                            ("Is it a warm or a cool colour?", [])):
        done = hearth(home, "chat", "--conversation", conversation, "--model", str(model),
                      question + QUESTION_SUFFIX, *extra, *load, *greedy)
        if done.returncode != 0:
            print(f"second turn failed: {done.stderr.strip()}")
            return
        turns.append((done.stdout.strip(), _stats(done.stderr)))
    (first, one), (second, two) = turns
    print(f"second turn: {first!r} then {second!r}; prompt tokens evaluated {one.get('evaluated_prompt_tokens')} "
          f"then {two.get('evaluated_prompt_tokens')}; first token in {one.get('ttft_s', 0):.2f} s then "
          f"{two.get('ttft_s', 0):.2f} s")


def _new_conversation(home: Path) -> int:
    """A stored conversation to continue (`hearth chat --conversation` continues one; the window
    starts them), made in the temporary HEARTH_HOME's database."""
    os.environ["HEARTH_HOME"] = str(home)
    sys.path.insert(0, str(ROOT))
    from app.owners import paths
    from app.store import ConversationStore

    with ConversationStore(paths.database_path()) as store:
        return store.create_conversation(title="vision check")


def _stats(stderr: str) -> dict:
    for line in reversed(stderr.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}


if __name__ == "__main__":
    sys.exit(main())
