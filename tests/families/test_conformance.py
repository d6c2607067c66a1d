"""Every supported model family, run through the real engine and llama.cpp.

One tiny real GGUF per family (support/model_files/tiny_models.py: the family's architecture, real
tokenizer, published template and special tokens, random weights) and the real Gemma 3 270M
go through the same checks: what inspection reports, byte-exact prompts against Hugging Face's
own rendering, BOS handling, end-of-turn and stop-string handling, prefix reuse across turns,
and the fallback template of a file that has none. The weights are noise, so replies are
forced token by token with logit bias (`forced`).

The four families.json entries that are templates rather than model families (Qwen3's newer
template, Mistral v0.1, generic ChatML, Llama 2 chat) run on the tiny model that has their
tokenizer, with the template given as the user's override.
"""

from __future__ import annotations

import functools
import itertools

import pytest
from support.model_files import tiny_models as tiny
from support.reply_events import collect

from app.engine.gguf.modelfile import END_OF_TURN_TEXTS
from app.engine.gguf.reading import inspect_model
from app.engine.llama.generator import Engine
from app.engine.sampling import SamplingParams
from app.engine.templates.chat_template import ChatTemplate, fallback_name, template_for
from app.engine.types import LoadOptions, ReplyStats

ENTRIES = tiny.load_families_json()
FAMILIES = tiny.ALL_FAMILIES
N_CTX = tiny.TEST_N_CTX

# What the real models are, and therefore what the engine must report and do.
ARCHITECTURE = {
    "llama-3.1": "llama", "tinyllama": "llama", "phi-3": "phi3", "phi-4-mini": "phi3", "phi-4": "phi3",
    "qwen3": "qwen3", "smollm2": "llama", "gemma-3": "gemma3",
}
# Does the prompt start with a BOS token? (SmolLM2's BOS is <|im_start|>, which opens every turn.)
STARTS_WITH_BOS = {
    "llama-3.1": True, "tinyllama": True, "phi-3": True, "phi-4-mini": False, "phi-4": False,
    "qwen3": False, "smollm2": True, "gemma-3": True,
    "qwen3 (newer revision)": False, "mistral-v0.1": True, "chatml (generic)": False, "llama-2-chat": True,
}
FALLBACK = {
    "llama-3.1": "llama3", "tinyllama": "llama2", "phi-3": "phi3", "phi-4-mini": "phi3", "phi-4": "phi4",
    "qwen3": "chatml", "smollm2": "chatml", "gemma-3": "gemma",
}
# The families.json entry each fallback was copied from, and the token that ends its turns.
FALLBACK_SOURCE = {
    "gemma": "gemma-3", "llama3": "llama-3.1", "phi4": "phi-4", "chatml": "chatml (generic)", "phi3": "phi-3",
    "llama2": "llama-2-chat",
}
FALLBACK_TURN_END = {
    "gemma": "<end_of_turn>", "llama3": "<|eot_id|>", "phi4": "<|im_end|>", "chatml": "<|im_end|>",
    "phi3": "<|end|>", "llama2": "</s>",
}
# Template-only entries: the tiny model whose tokenizer they belong with.
TEMPLATE_HOSTS = {
    "qwen3 (newer revision)": "qwen3", "mistral-v0.1": "tinyllama", "chatml (generic)": "qwen3",
    "llama-2-chat": "tinyllama",
}
ALL_ENTRIES = tuple(FAMILIES) + tuple(TEMPLATE_HOSTS)
CONVERSATIONS = ("system_multi_turn", "no_system", "reasoning_in_history")


def test_every_entry_of_families_json_is_covered():
    assert set(ENTRIES) == set(ALL_ENTRIES)
    assert {f.name for f in tiny.TINY_FAMILIES} | {tiny.GEMMA_FAMILY} == set(FAMILIES)


# --- helpers ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def engine_for(engines, model_files):
    """Entry name -> Engine: a family's own model, or a template entry on its host model."""
    hosted: dict[str, Engine] = {}

    def get(name: str) -> Engine:
        if name in FAMILIES:
            return engines[name]
        if name not in hosted:
            options = LoadOptions(n_ctx=N_CTX, template_override=ENTRIES[name]["chat_template"])
            hosted[name] = Engine(model_files[TEMPLATE_HOSTS[name]][0], options)
        return hosted[name]

    yield get
    for engine in hosted.values():
        engine.close()


@functools.lru_cache(maxsize=None)
def file_vocab(path) -> tuple[list[str], list[int]]:
    """The token texts and types stored in a model file, read without the app's code."""
    meta = tiny.read_metadata(path, frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}))
    tokens = [t.decode("utf-8", errors="replace") for t in meta["tokenizer.ggml.tokens"]]
    return tokens, [int(t) for t in meta["tokenizer.ggml.token_type"]]


def file_id(path, text: str) -> int:
    tokens, _types = file_vocab(path)
    assert tokens.count(text) == 1, f"{text!r} should be exactly one token in {path.name}"
    return tokens.index(text)


def run(engine: Engine, messages: list[dict], params: SamplingParams) -> tuple[str, ReplyStats]:
    chunks, stats = collect(engine.stream(messages, params))
    assert stats is not None and stats.error is None, stats
    return "".join(chunks), stats


def forced(tokens: list[int], end: int | None = None, **changes) -> SamplingParams:
    """Greedy sampling that emits `tokens` in order, then `end` (if given).

    Each token gets a smaller bias than the one before, and a repeat penalty of 2 halves a
    token's logit once it has been emitted, so the next one in line wins; the gaps (200)
    dwarf any logit a model produces by itself.
    """
    sequence = list(tokens) + ([end] if end is not None else [])
    assert len(set(sequence)) == len(sequence) <= 5, sequence
    bias = {token: 2000.0 - 200.0 * i for i, token in enumerate(sequence)}
    params = dict(
        temperature=0.0, repeat_penalty=2.0, repeat_last_n=64, logit_bias=bias,
        max_tokens=len(tokens) + 2, seed=1,
    )
    params.update(changes)
    return SamplingParams(**params)


def in_context_tokens(engine: Engine, messages: list[dict], text: str) -> list[int]:
    """The tokens `text` gets when it directly follows the prompt for `messages`."""
    prompt = engine.render(messages)
    before = engine.tokenize(prompt)
    after = engine.tokenize(prompt + text)
    assert after[: len(before)] == before, "the prompt's last token merged with the reply"
    return after[len(before):]


def piece(engine: Engine, token: int) -> str:
    return engine._piece(token).decode("utf-8")


def shown_pieces(engine: Engine, tokens: list[int]) -> list[str]:
    """What a reply of these tokens shows: SentencePiece's word-start space is dropped from
    the first piece where the vocabulary adds a space prefix, as transformers' decode does."""
    pieces = [piece(engine, t) for t in tokens]
    if pieces and engine.info.add_space_prefix and pieces[0].startswith(" "):
        pieces[0] = pieces[0][1:]
    return pieces


def ask(text: str, system: str | None = "You are a test.") -> list[dict]:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]


def ordinary_words(engine: Engine, messages: list[dict], phrase: str, count: int) -> list[int]:
    tokens = in_context_tokens(engine, messages, phrase)[:count]
    assert len(tokens) == count and len(set(tokens)) == count, tokens
    assert not set(tokens) & engine.stop_token_ids
    return tokens


# --- 1. inspection ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_inspection_reports_architecture_template_and_end_of_turn_tokens(family, engines, model_files):
    entry, path = ENTRIES[family], model_files[family][0]
    engine = engines[family]
    info = engine.info  # inspect_model(path), as the engine ran it
    assert info.path == path
    assert info.architecture == ARCHITECTURE[family]
    # The template in use is the family's published one: from the file, or (Gemma 3 270M
    # ships none) the built-in fallback copied from the same source.
    assert engine.template.source == entry["chat_template"]
    assert engine.template.name == ("model" if info.has_chat_template else f"fallback:{FALLBACK[family]}")
    assert info.eos.text == entry["eos_token"] and info.eos.id == file_id(path, entry["eos_token"])
    if entry["bos_token"] is not None:
        assert info.bos.text == entry["bos_token"] and info.bos.id == file_id(path, entry["bos_token"])

    _tokens, types = file_vocab(path)
    reported = {t.text: t.id for t in info.end_of_turn}
    for text in entry["stop_tokens"]:
        token_id = file_id(path, text)
        assert types[token_id] == tiny.CONTROL, f"{text} must be a control token in the file"
        assert reported.get(text) == token_id, f"inspection must report {text} as end-of-turn"
        assert token_id in engine.stop_token_ids
        assert engine.tokenize(text, at_start=False) == [token_id], "llama.cpp must parse it as one token"
    # Anything else reported as end-of-turn is a control token of this very file.
    for token in info.end_of_turn:
        assert types[token.id] == tiny.CONTROL and file_vocab(path)[0][token.id] == token.text
    # A tiny model's ids are its source vocab's (except the slots the generator renamed).
    spec = {f.name: f for f in tiny.TINY_FAMILIES}.get(family)
    if spec is not None:
        vocab_tokens, _ = file_vocab(tiny.VOCAB_DIR / spec.vocab)
        for token in info.end_of_turn:
            assert spec.renames.get(token.id, (vocab_tokens[token.id],))[0] == token.text


# --- 2. byte-exact prompts ------------------------------------------------------------------------


def test_references_come_from_transformers(references):
    assert references["generator"].startswith("transformers ")
    assert set(references["renderings"]) == set(ENTRIES)
    assert set(references["conversations"]) == set(CONVERSATIONS)


@pytest.mark.parametrize("conversation", CONVERSATIONS)
@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_template_renders_byte_exact_reference(name, conversation, references):
    entry = ENTRIES[name]
    template = ChatTemplate(entry["chat_template"], entry["bos_token"] or "", entry["eos_token"] or "")
    expected = references["renderings"][name][conversation]["text"]
    assert template.render(references["conversations"][conversation]) == expected


@pytest.mark.parametrize("conversation", CONVERSATIONS)
@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_engine_prompt_is_byte_exact_reference(name, conversation, references, engine_for):
    """The same, through the engine, with BOS/EOS texts read from the model file."""
    expected = references["renderings"][name][conversation]["text"]
    assert engine_for(name).render(references["conversations"][conversation]) == expected


# --- 3. BOS -------------------------------------------------------------------------------------


def check_bos(tokens: list[int], text: str, bos, starts_with_bos: bool) -> None:
    if starts_with_bos:
        assert tokens[0] == bos.id and tokens[1] != bos.id
        # Templates that write BOS themselves (Llama 3.1, Gemma 3) get no second one; those
        # that write it on every turn (Llama 2, SmolLM2's <|im_start|>) keep those.
        assert tokens.count(bos.id) == max(1, text.count(bos.text))
    else:
        assert tokens[0] != bos.id
        assert tokens.count(bos.id) == text.count(bos.text) == 0


@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_prompt_has_exactly_one_leading_bos_or_none(name, engine_for, references):
    engine = engine_for(name)
    messages = references["conversations"]["system_multi_turn"]
    text = engine.render(messages)
    check_bos(engine.tokenize(text), text, engine.info.bos, STARTS_WITH_BOS[name])
    check_bos(engine.prompt_tokens(messages), text, engine.info.bos, STARTS_WITH_BOS[name])


# --- 4. end of turn -----------------------------------------------------------------------------

STOP_CASES = [(name, text) for name in ALL_ENTRIES for text in ENTRIES[name]["stop_tokens"]]


@pytest.mark.parametrize(("name", "stop_text"), STOP_CASES, ids=[f"{n}:{t}" for n, t in STOP_CASES])
def test_end_of_turn_token_ends_the_reply_unseen(name, stop_text, engine_for):
    engine = engine_for(name)
    messages = ask(f"Say one word, then stop with {stop_text}.")
    stop_id = engine.info.special_tokens[stop_text]
    word = ordinary_words(engine, messages, "Hello", 1)
    text, stats = run(engine, messages, forced(word, end=stop_id, max_tokens=8))
    assert stats.stop_reason == "end_of_turn"
    assert stats.completion_tokens == 1
    assert text == "".join(shown_pieces(engine, word[:1]))
    assert stop_text not in text


# --- 5. stop strings ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_stop_string_across_tokens_ends_the_reply_unseen(name, engine_for):
    engine = engine_for(name)
    messages = ask("Tell me about Paris.")
    words = ordinary_words(engine, messages, "Paris is lovely", 3)
    pieces = shown_pieces(engine, words)
    full = "".join(pieces)
    # A stop string from the middle of the second piece to the middle of the third.
    start = len(pieces[0]) + len(pieces[1]) // 2
    end = len(pieces[0]) + len(pieces[1]) + max(1, len(pieces[2]) // 2)
    stop = full[start:end]
    assert full.find(stop) == start, (full, stop)
    text, stats = run(engine, messages, forced(words, stop=(stop,), max_tokens=10))
    assert stats.stop_reason == "stop_string"
    assert stats.completion_tokens == 3
    assert text == full[:start] and stop not in text


# --- 6. prefix reuse across turns ---------------------------------------------------------------


def reply_separator(engine: Engine, messages: list[dict]) -> str:
    """What the template writes between the generation prompt and a reply in the history."""
    marker = "MARKER-7f3a"
    history = engine.render(messages + [{"role": "assistant", "content": marker}, {"role": "user", "content": "?"}])
    prompt = engine.render(messages)
    assert history.startswith(prompt)
    return history[len(prompt):history.index(marker)]


# Mistral v0.1's template writes ' ' + reply, and a SentencePiece model's first reply token
# carries that space ('▁Paris'). The engine shows and stores 'Paris' (as transformers' decode
# does), and still reuses the generated token when the template puts the space back.
@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_turn_two_extends_turn_one_and_evaluates_only_new_tokens(name, engine_for):
    engine = engine_for(name)
    turn1 = ask("What is the capital of France?", system=f"You are the {name} reuse test.")
    end = engine.info.special_tokens[ENTRIES[name]["stop_tokens"][0]]
    # What a real model writes there: the template's separator (Llama 2: ' '), then words.
    phrase = reply_separator(engine, turn1) + "Paris, of course"
    reply_tokens = in_context_tokens(engine, turn1, phrase)[:4]
    reply, stats1 = run(engine, turn1, forced(reply_tokens, end=end))
    assert stats1.stop_reason == "end_of_turn" and stats1.completion_tokens == len(reply_tokens)
    assert reply == "".join(shown_pieces(engine, reply_tokens)) and not reply.startswith("  ")
    cached = engine.cached_tokens
    assert cached == engine.tokenize(engine.render(turn1)) + reply_tokens

    turn2 = turn1 + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And of Italy?"}]
    text2 = engine.render(turn2)
    prompt1_text, separator = engine.render(turn1), reply_separator(engine, turn1)
    # The reply as shown, after the template's separator unless the reply already began with it.
    assert text2.startswith(prompt1_text + reply) or text2.startswith(prompt1_text + separator + reply)
    prompt2 = engine.prompt_tokens(turn2)
    assert prompt2[: len(cached)] == cached
    # Reusing tokens changes nothing: the prompt is what tokenizing its text afresh gives.
    assert prompt2 == engine.tokenize(text2)

    _text, stats2 = run(engine, turn2, forced([], end=end))
    assert stats2.prompt_tokens == len(prompt2)
    assert stats2.evaluated_prompt_tokens == len(prompt2) - len(cached)


@pytest.mark.parametrize("name", ALL_ENTRIES)
def test_edited_reply_reuses_the_prompt_and_tokenizes_the_rest_in_place(name, engine_for):
    """When the stored reply differs from the generated one, reuse stops after the prompt.

    The text after that point must be tokenized as it is in the full prompt. (SentencePiece
    vocabs with a space prefix put a space before every text they start, which must not
    happen in the middle of a prompt.)
    """
    engine = engine_for(name)
    turn1 = ask("Name a prime number.", system=f"You are the {name} edit test.")
    end = engine.info.special_tokens[ENTRIES[name]["stop_tokens"][0]]
    reply_tokens = in_context_tokens(engine, turn1, "Seven")[:1]
    run(engine, turn1, forced(reply_tokens, end=end))
    prompt1 = engine.tokenize(engine.render(turn1))

    turn2 = turn1 + [{"role": "assistant", "content": "Eleven, say."}, {"role": "user", "content": "Another?"}]
    prompt2 = engine.prompt_tokens(turn2)
    assert prompt2[: len(prompt1)] == prompt1
    assert prompt2 == engine.tokenize(engine.render(turn2))
    _text, stats = run(engine, turn2, forced([], end=end))
    assert stats.evaluated_prompt_tokens <= len(prompt2) - len(prompt1) + 1


# --- 7. fallback templates ----------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_file_without_template_gets_its_family_fallback(family, model_files, references, engines):
    """The model's twin without `tokenizer.chat_template` (Gemma 3 270M ships that way)."""
    bare = model_files[family][1]
    info = inspect_model(bare)
    assert not info.has_chat_template
    expected = FALLBACK[family]
    assert fallback_name(info) == expected
    template = template_for(info)  # what Engine() does (test_engine_loads_the_fallback below)
    assert template.name == f"fallback:{expected}"
    source = FALLBACK_SOURCE[expected]
    for conversation in CONVERSATIONS:
        rendered = template.render(references["conversations"][conversation])
        assert rendered == references["renderings"][source][conversation]["text"]
    # Same vocabulary as the loaded model: the fallback's turn-end token ends generation there,
    # and its prompt gets the family's BOS treatment.
    engine = engines[family]
    assert info.special_tokens == engine.info.special_tokens
    assert engine.info.special_tokens[FALLBACK_TURN_END[expected]] in engine.stop_token_ids
    text = template.render(references["conversations"]["system_multi_turn"])
    check_bos(engine.tokenize(text), text, engine.info.bos, STARTS_WITH_BOS[family])


@pytest.mark.parametrize("family", ["tinyllama", "phi-3"])
def test_engine_loads_the_fallback_for_a_file_without_template(family, model_files):
    engine = Engine(model_files[family][1], LoadOptions(n_ctx=N_CTX))
    try:
        assert engine.template.name == f"fallback:{FALLBACK[family]}"
        _text, stats = run(engine, ask("Hi"), forced([], end=engine.info.eos.id))
        assert stats.stop_reason == "end_of_turn"
    finally:
        engine.close()


# --- same names, different tokens -----------------------------------------------------------------


def test_same_named_tokens_keep_each_models_own_ids(engines, model_files):
    """`<|endoftext|>` is 32000 in Phi-3 and 151643 in Qwen; `<|end|>` is 32007 in Phi-3 and
    151645 (Qwen's `<|im_end|>` slot) in the Phi-4-mini model; `</s>` is id 2 in both TinyLlama
    (its EOS) and Phi-3 (an ordinary text token). Each engine stops on its own ids only."""
    stop_ids = {}
    for family in FAMILIES:
        path = model_files[family][0]
        own = {text: file_id(path, text) for text in ENTRIES[family]["stop_tokens"]}
        stop_ids[family] = own
        for text, token_id in own.items():
            assert engines[family].info.special_tokens[text] == token_id
            assert token_id in engines[family].stop_token_ids
    assert stop_ids["phi-3"]["<|endoftext|>"] != stop_ids["qwen3"]["<|endoftext|>"]
    assert stop_ids["phi-3"]["<|end|>"] != stop_ids["phi-4-mini"]["<|end|>"]

    for a, b in itertools.permutations(FAMILIES, 2):
        b_tokens, b_types = file_vocab(model_files[b][0])
        for text, a_id in stop_ids[a].items():
            if a_id >= len(b_tokens) or b_types[a_id] == tiny.CONTROL:
                continue  # B has no such id, or it is one of B's own control tokens
            assert a_id not in engines[b].stop_token_ids, (
                f"{a}'s {text} is id {a_id}; in {b} that id is the text token {b_tokens[a_id]!r}"
            )


def test_phi3_endoftext_id_is_plain_text_in_qwen3(engines, model_files):
    """Force Phi-3's <|endoftext|> id in Qwen3: an ordinary token there, so the reply goes on."""
    qwen = engines["qwen3"]
    phi_id = file_id(model_files["phi-3"][0], "<|endoftext|>")
    text, stats = run(qwen, ask("Go on."), forced([phi_id], max_tokens=1))
    assert stats.stop_reason == "length" and stats.completion_tokens == 1
    assert text == piece(qwen, phi_id) and text


# The families whose vocab holds a text token spelled like an end token. Not the Llamas: Llama 2's
# `</s>` is its real end token (a control token), and Llama 3's vocab has none.
END_TOKEN_LOOKALIKE_FAMILIES = [family for family in FAMILIES if family not in ("llama-3.1", "tinyllama")]


@pytest.mark.parametrize("family", END_TOKEN_LOOKALIKE_FAMILIES)
def test_text_tokens_named_like_end_tokens_do_not_end_a_reply(family, engines, model_files):
    """`</s>` is an HTML tag token in Gemma 3 and Phi-3 and a BPE word in Qwen's vocab; llama.cpp
    flags any token with that text as end-of-generation, but only the file's control tokens
    may end a reply, and the tag must show."""
    engine = engines[family]
    tokens, types = file_vocab(model_files[family][0])
    lookalikes = [i for i, t in enumerate(tokens) if t in END_OF_TURN_TEXTS and types[i] != tiny.CONTROL]
    assert lookalikes, f"{family}'s vocab has no text token named like an end token: nothing was checked"
    for token_id in lookalikes:
        assert token_id not in engine.stop_token_ids, tokens[token_id]
    token_id = lookalikes[0]
    text, stats = run(engine, ask("Close the tag."), forced([token_id], max_tokens=1))
    assert stats.stop_reason == "length" and text == tokens[token_id]
