"""Tiny real GGUF models whose greedy reply to any chat is one fixed tool call, by construction.

The tool-calling path (template -> llama.cpp -> reply text -> parsed call) needs a model that
really writes a family's call syntax, token by token, through llama.cpp. Trained models are
too big for the suite and random ones say nothing useful; these are one-layer llama networks
whose weights are set by hand so that the next token is a fixed function of the last few:

- The sequence to spell is the template's generation prompt (`<|im_start|>assistant\\n`), the
  call text, then the end-of-turn token. Its distinct tokens are the model's *symbols*; every
  other token of the (real, 150k-token) vocabulary is one more symbol, OTHER.
- Residual stream: one constant dimension (BIAS), then blocks of one-hot symbol slots: block 0
  holds the current token (the embedding writes it: BIAS + its slot, so every token's vector
  has the same norm and RMSNorm is a fixed scale), block h the token h positions back.
- Attention: head h copies block 0 of position t-h into block h. Its query and key read only
  BIAS, so they are the same vector at every position; RoPE then turns them by angles
  proportional to the position, and the key is turned ahead by h steps, so the score of
  position s seen from t is sum_i w_i cos(theta_i (t - s - h)): largest exactly h back, and
  lower by a margin at every other distance up to the context length (checked numerically for
  the file's RoPE frequencies, and scaled so the softmax puts ~all weight there).
- FFN (SwiGLU): one hidden unit per step of the sequence. Its gate counts the slots of that
  step's context that are set (the current token in block 0, and as many tokens back as tell
  this step apart in blocks 1, 2...), minus (context length - 0.5), times a steep factor beta:
  +beta/2 when all match, -beta/2 or less otherwise, where SiLU is ~0. Its up projection is
  the constant; its down projection writes the next token's slot into block 0,
  NEXT_STRENGTH times as strong as the current token's.
- Output: the logit of symbol j's token reads block 0's slot j; every other token reads zero.
  So the next token wins by a wide margin (repeat penalties cannot turn it) and greedy
  decoding spells the sequence exactly.

How much context each step needs is computed, not assumed: the shortest run of tokens ending
at the step (the current token alone, then one more back, ...) that no other place in the
sequence shares with a different successor, counting the unknown prompt tokens before the
generation prompt as matching anything, so the reply starts the same whatever came before.
The number of heads is the longest lookback any step needs (2 for the families' calls: repeated
tokens such as `":` and ` "` are told apart by the key before them).

The families (scripted_families.py) and what stands for what are described there. A reply
may hold control tokens (a call marker such as `[TOOL_CALLS]`): spelled by their text, and
checked to vanish, they and only they, from the reply as printed without tools.

The files have 64 to 80 dimensions, 17 to 27 FFN units and two heads; the vocabulary's
embedding and output matrices (f16) make them 11 to 48 MB, and llama.cpp loads them in 0.1 to
0.6 s (mostly the tokenizer).

Usage: `scripted_models()` -> family -> ScriptedModel (the file, its text with and without
its control-token markers, the call's name, arguments and id), built once per source key into
tests/.cache/scripted-models/<key>/; `write_scripted_model()` writes one for any tokenizer, template and text.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, LlamaFileType
from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from support.model_files import scripted_families
from support.model_files import tiny_models as tiny
from support.model_files.scripted_families import CALL_ARGUMENTS, CALL_NAME, SCRIPTED_FAMILIES
from support.model_files.tiny_gguf import write_gguf

CACHE_ROOT = tiny.TESTS / ".cache" / "scripted-models"
CONTEXT_LENGTH = 4096  # the attention margin is checked over every distance up to this
ROPE_BASE = 10000.0
MIN_HEAD_DIM = 32  # 16 RoPE frequencies; a head's value also carries one block of slots
ATTENTION_GAP = 30.0  # score of the right position minus any other: e^-30 of the weight left
GATE_STEEPNESS = 40.0  # beta: SiLU(-20) ~ -4e-8, a non-matching unit writes nothing
NEXT_STRENGTH = 10.0  # the next token's slot against the current token's 1
LOGIT_SCALE = 4.0
MAX_LOOKBACK = 3

@dataclass(frozen=True)
class ScriptedModel:
    family: str
    path: Path
    text: str  # the reply's whole text, control-token markers shown (as a reply that may call a tool shows it)
    plain: str  # the reply as a reply that cannot call a tool shows it (no control token's text)
    name: str  # the call in it
    arguments: dict
    call_id: str  # the id the call carries, or ""


# --- spelling the sequence in the vocab's own tokens ---------------------------------------------


class _Speller:
    """The family's tokenizer, loaded by llama.cpp from a vocab-only file: the tokens the model
    must produce are those whose pieces, as the engine prints them, make the text exactly."""

    def __init__(self, family: tiny.Family, vocab: dict[str, object], directory: Path):
        path = directory / "vocab.gguf"

        def keys(writer: GGUFWriter) -> None:
            self.index = tiny.add_tokenizer(writer, family, vocab, "")

        write_gguf(path, "llama", keys)
        self._llm = Llama(str(path), vocab_only=True, verbose=False)
        self._vocab = self._llm._model.vocab
        self._newline = self._llm.tokenize(b"\n", add_bos=False, special=False)
        _, types, _ = tiny.family_tokenizer(family, vocab)
        special = {tiny.CONTROL, tiny.USER_DEFINED}
        self._specials = sorted((text for text, i in self.index.items() if types[i] in special), key=len, reverse=True)

    def close(self) -> None:
        self._llm.close()

    def spell(self, text: str, shown_without: str | None = None) -> list[int]:
        """Special tokens by their text; the text between them as it tokenizes in place. A
        SentencePiece tokenizer puts "▁" before every text it starts; starting it after a
        newline and dropping the newline's tokens leaves the tokens that spell it as is.
        `shown_without`: the text is a reply, which must print as that (the text without its
        control-token markers: llama.cpp prints no control token's text)."""
        tokens: list[int] = []
        for part in re.split("(" + "|".join(map(re.escape, self._specials)) + ")", text):
            if part in self._specials:
                tokens.append(self.index[part])
            elif part and len(self._newline) > 1:
                marked = self._llm.tokenize(b"\n" + part.encode(), add_bos=False, special=False)
                tokens += marked[len(self._newline):]
            elif part:
                tokens += self._llm.tokenize(part.encode(), add_bos=False, special=False)
        spelled = b"".join(self.piece(t, True) for t in tokens).decode()
        if spelled != text:
            raise ValueError(f"cannot spell {text!r} exactly: {spelled!r}")
        printed = b"".join(self.piece(t, False) for t in tokens).decode()
        if shown_without is not None and printed != shown_without:
            raise ValueError(f"{text!r} prints as {printed!r}, not {shown_without!r}")
        return tokens

    def piece(self, token: int, special: bool) -> bytes:
        """The token's text; without `special`, as the engine prints it (a control token's is empty)."""
        buffer = bytes(256)
        n = llama_c.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        return buffer[:n]


# --- what each step looks at -----------------------------------------------------------------------


def plan_steps(sequence: list[int], first: int) -> list[tuple[tuple[int, ...], int]]:
    """(context, next token) for each step from position `first` on: the context is the
    shortest run of tokens ending there (oldest first) after which the sequence always goes on
    the same way. Tokens before the sequence are the prompt's, unknown: they may match anything."""

    def may_match(context: tuple[int, ...], at: int) -> bool:
        return all(at - back < 0 or sequence[at - back] == token for back, token in enumerate(reversed(context)))

    positions = range(first, len(sequence) - 1)
    steps = {}
    for at in positions:
        for lookback in range(min(at, MAX_LOOKBACK) + 1):
            context = tuple(sequence[at - lookback:at + 1])
            if all(sequence[other + 1] == sequence[at + 1] for other in positions if may_match(context, other)):
                steps[context] = sequence[at + 1]
                break
        else:
            raise ValueError(f"position {at}: the tokens up to it do not tell the next one; "
                             "choose another text or a longer prompt tail")
    return list(steps.items())


# --- the weights ---------------------------------------------------------------------------------


def rope_thetas(head_dim: int) -> np.ndarray:
    """llama.cpp's RoPE frequencies (normal mode: pair i is dimensions 2i and 2i+1)."""
    return ROPE_BASE ** (-np.arange(0, head_dim, 2) / head_dim)


def attention_gap(head_dim: int, lookback: int) -> float:
    """How far sum_i cos(theta_i d) stays below its peak (d = 0) for every other distance a
    head looking `lookback` back can see, per unit weight on each frequency."""
    distances = np.concatenate([np.arange(-lookback, 0), np.arange(1, CONTEXT_LENGTH + 1)])
    return float((1 - np.cos(np.outer(distances, rope_thetas(head_dim)))).sum(axis=1).min())


@dataclass(frozen=True)
class _Layout:
    """Where things live in the residual stream: BIAS at 0, then `heads + 1` blocks of `width`
    one-hot slots (block 0: the current token, block h: the token h back), a slot per symbol
    and the last for OTHER."""

    width: int
    heads: int

    @property
    def head_dim(self) -> int:  # a head's value carries one block
        return max(MIN_HEAD_DIM, self.width + self.width % 2)

    @property
    def n_embd(self) -> int:
        return -(-(1 + (self.heads + 1) * self.width) // 16) * 16

    def slot(self, block: int, symbol: int) -> int:
        return 1 + block * self.width + symbol

    def norm_scale(self, slots: int) -> float:
        """What RMSNorm multiplies a vector of BIAS and `slots` ones by: every token's
        embedding has one slot set, and after attention each head has added one more."""
        return float(np.sqrt(self.n_embd / (1 + slots)))


def _embeddings(layout: _Layout, symbols: dict[int, int], n_vocab: int):
    """token_embd: BIAS plus the token's slot in block 0 (OTHER for the rest of the vocab);
    output: the logit of a symbol's token reads its slot, every other token's is zero."""
    embd = np.zeros((n_vocab, layout.n_embd), np.float32)
    embd[:, 0] = 1.0
    embd[:, layout.slot(0, layout.width - 1)] = 1.0
    output = np.zeros_like(embd)
    for token, symbol in symbols.items():
        embd[token, layout.slot(0, layout.width - 1)] = 0.0
        embd[token, layout.slot(0, symbol)] = 1.0
        output[token, layout.slot(0, symbol)] = LOGIT_SCALE
    return embd, output


def _attention(layout: _Layout):
    """attn_q, attn_k, attn_v, attn_output: head h (1-based) copies block 0 of the token h
    back into block h. Query and key read BIAS only; in each RoPE pair i the query is (a, 0)
    and the key a (cos theta_i h, sin theta_i h), so after RoPE turns both by their positions
    t and s, their dot product is a^2 cos(theta_i (t - s - h)), largest at s = t - h."""
    dim, thetas = layout.head_dim, rope_thetas(layout.head_dim)
    scale = layout.norm_scale(1)
    q = np.zeros((layout.heads * dim, layout.n_embd), np.float32)
    k, v = np.zeros_like(q), np.zeros_like(q)
    o = np.zeros((layout.n_embd, layout.heads * dim), np.float32)
    for head in range(layout.heads):
        back, first = head + 1, head * dim
        # The score (q.k / sqrt(dim)) sum_i cos(...) must beat every other position by the gap.
        amplitude = np.sqrt(ATTENTION_GAP * np.sqrt(dim) / attention_gap(dim, back)) / scale
        q[first:first + dim:2, 0] = amplitude
        k[first:first + dim:2, 0] = amplitude * np.cos(thetas * back)
        k[first + 1:first + dim:2, 0] = amplitude * np.sin(thetas * back)
        for symbol in range(layout.width):
            v[first + symbol, layout.slot(0, symbol)] = 1 / scale
            o[layout.slot(back, symbol), first + symbol] = 1.0
    return q, k, v, o


def _feed_forward(layout: _Layout, symbols: dict[int, int], steps):
    """ffn_gate, ffn_up, ffn_down: a unit per step. The gate is beta (matching slots - (n -
    0.5)) for a context of n tokens: beta/2 when all n match, -beta/2 or less otherwise (SiLU
    ~0); up is 1 (from BIAS); down writes NEXT_STRENGTH into the next token's slot."""
    scale = layout.norm_scale(1 + layout.heads)
    gate = np.zeros((len(steps), layout.n_embd), np.float32)
    up = np.zeros_like(gate)
    down = np.zeros((layout.n_embd, len(steps)), np.float32)
    for unit, (context, following) in enumerate(steps):
        for back, token in enumerate(reversed(context)):
            gate[unit, layout.slot(back, symbols[token])] = GATE_STEEPNESS / scale
        gate[unit, 0] = -GATE_STEEPNESS * (len(context) - 0.5) / scale
        up[unit, 0] = 1 / scale
        half_beta = GATE_STEEPNESS / 2
        down[layout.slot(0, symbols[following]), unit] = NEXT_STRENGTH * (1 + np.exp(-half_beta)) / half_beta
    return gate, up, down


def _tensors(sequence: list[int], steps, n_vocab: int) -> tuple[_Layout, list[tuple[str, np.ndarray]]]:
    symbols = {token: slot for slot, token in enumerate(dict.fromkeys(sequence))}
    layout = _Layout(width=len(symbols) + 1, heads=max(1, *(len(context) - 1 for context, _ in steps)))
    embd, output = _embeddings(layout, symbols, n_vocab)
    q, k, v, o = _attention(layout)
    gate, up, down = _feed_forward(layout, symbols, steps)
    ones = np.ones(layout.n_embd, np.float32)  # RMSNorm weights: the scales are in the matrices
    named = [("token_embd.weight", embd), ("output_norm.weight", ones), ("output.weight", output),
             ("blk.0.attn_norm.weight", ones), ("blk.0.attn_q.weight", q), ("blk.0.attn_k.weight", k),
             ("blk.0.attn_v.weight", v), ("blk.0.attn_output.weight", o), ("blk.0.ffn_norm.weight", ones),
             ("blk.0.ffn_gate.weight", gate), ("blk.0.ffn_up.weight", up), ("blk.0.ffn_down.weight", down)]
    # f16 matrices, as a converted model's; llama.cpp keeps norm weights in f32.
    return layout, [(name, w if w.ndim == 1 else w.astype(np.float16)) for name, w in named]


# --- writing -------------------------------------------------------------------------------------


def write_scripted_model(path: Path, family: tiny.Family, vocab: dict[str, object], chat_template: str,
                         prompt_tail: str, text: str, end: str, plain: str | None = None) -> Path:
    """A GGUF with `family`'s tokenizer and `chat_template` whose greedy reply to any prompt
    ending in `prompt_tail` is exactly `text`, then the token `end`; printed without its
    control tokens' text, the reply is `plain` (by default `text`: it holds none)."""
    with tempfile.TemporaryDirectory() as scratch:
        speller = _Speller(family, vocab, Path(scratch))
        try:
            tail = speller.spell(prompt_tail)
            sequence = tail + speller.spell(text, text if plain is None else plain) + [speller.index[end]]
        finally:
            speller.close()
    n_vocab = len(speller.index)
    steps = plan_steps(sequence, len(tail) - 1)
    layout, tensors = _tensors(sequence, steps, n_vocab)

    def keys(writer: GGUFWriter) -> None:
        writer.add_name(f"hearth-scripted-{family.name}")
        writer.add_file_type(LlamaFileType.MOSTLY_F16)
        writer.add_context_length(CONTEXT_LENGTH)
        writer.add_embedding_length(layout.n_embd)
        writer.add_block_count(1)
        writer.add_feed_forward_length(len(steps))
        writer.add_head_count(layout.heads)
        writer.add_head_count_kv(layout.heads)
        writer.add_key_length(layout.head_dim)  # heads * head_dim need not be n_embd
        writer.add_value_length(layout.head_dim)
        writer.add_layer_norm_rms_eps(1e-6)
        writer.add_rope_dimension_count(layout.head_dim)
        writer.add_rope_freq_base(ROPE_BASE)
        writer.add_vocab_size(n_vocab)
        tiny.add_tokenizer(writer, family, vocab, chat_template)

    return write_gguf(path, "llama", keys, tensors)


def source_key() -> str:
    """A hash of everything the files depend on: this builder, the families and their template
    files, and what tiny_models.py's key covers (its tokenizer code, the GGUF writer, the vocabs
    and families.json)."""
    digest = hashlib.sha256(tiny.source_key().encode())
    templates = sorted({f.template for f in SCRIPTED_FAMILIES.values() if f.template.endswith(".jinja")})
    for path in [Path(__file__), Path(scripted_families.__file__),
                 *(scripted_families.TOOL_TEMPLATES / name for name in templates)]:
        digest.update(path.resolve().read_bytes())
    return digest.hexdigest()[:16]


def _paths(directory: Path) -> dict[str, ScriptedModel]:
    return {name: ScriptedModel(name, directory / f"{name}.gguf", f.text, f.plain, CALL_NAME, dict(CALL_ARGUMENTS),
                                f.call_id)
            for name, f in SCRIPTED_FAMILIES.items()}


def _build_all(directory: Path) -> None:
    entries = tiny.load_families_json()
    vocabs: dict[str, dict] = {}
    for name, scripted in SCRIPTED_FAMILIES.items():
        vocab_file = scripted.tokenizer.vocab
        if vocab_file not in vocabs:
            vocabs[vocab_file] = tiny.read_metadata(tiny.VOCAB_DIR / vocab_file)
        write_scripted_model(directory / f"{name}.gguf", scripted.tokenizer, vocabs[vocab_file],
                             scripted.chat_template(entries), scripted.prompt_tail, scripted.text, scripted.end,
                             scripted.plain)


def scripted_models(cache_root: Path = CACHE_ROOT) -> dict[str, ScriptedModel]:
    """family -> its scripted model, built on first use and cached by source key."""
    return _paths(tiny.cached_build(cache_root, source_key(), _build_all))


@contextlib.contextmanager
def scripted_engines(n_ctx: int = 2048) -> Iterator[Callable[[str], object]]:
    """family -> its scripted model in Hearth's Engine, each loaded on first use and closed
    when the block ends (a test module's fixture)."""
    from app.engine.llama.generator import Engine
    from app.engine.types import LoadOptions

    models, loaded = scripted_models(), {}

    def engine(family: str) -> Engine:
        if family not in loaded:
            loaded[family] = Engine(models[family].path, LoadOptions(n_ctx=n_ctx))
        return loaded[family]

    try:
        yield engine
    finally:
        for each in loaded.values():
            each.close()
