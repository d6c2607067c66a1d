"""Saved KV state per conversation (app/engine/kv/cache.py, kv_file.py, kv_fingerprint.py,
kv_seq.py): a state comes back only under the key it was saved with and only for a prompt its
tokens begin; damaged, foreign and half-written files are never loaded and are deleted; each
tier keeps the most recently used states within its byte budget. Fake payloads, except the
last tests, which save the real Gemma 3 270M's state (a sliding-window cache), restore it
into another context and check the reply is the same token for token."""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import threading
import time
from pathlib import Path

import pytest

from app.engine.gguf.fingerprint import NoFingerprint, model_fingerprint
from app.engine.kv import file as kv_file
from app.engine.kv.cache import StateCache, StateKey

KEY = StateKey(model_size=253_113_024, model_digest="ab" * 32, n_ctx=4096, kv_type="k=f16 v=f16 fa=0 swa_full=1",
               offloaded_layers=0, llama_version="llama-cpp-python 0.3.36; llama.cpp 0.5.0-dev; state 3/10")
TOKENS = [2, 105, 2364, 107, 9259, 236764]
PAYLOAD = bytes(range(256)) * 40  # 10 KiB standing in for llama.cpp's sequence state
META = b"the engine's token segments"


def state_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".kvstate"))


def payload(tag: int, size: int = 10_000) -> bytes:
    return bytes([tag % 256]) * size


# --- round trips and the prefix rule --------------------------------------------------------------


def test_a_state_comes_back_from_memory_for_a_prompt_its_tokens_begin(tmp_path):
    cache = StateCache(tmp_path, disk_budget=0)  # memory only
    cache.put(KEY, 1, TOKENS, PAYLOAD, META)
    assert cache.meta(KEY, 1) == META
    saved = cache.get(KEY, 1, TOKENS + [108, 3041])
    assert saved is not None and (saved.tokens, saved.payload, saved.meta) == (TOKENS, PAYLOAD, META)
    assert state_files(tmp_path) == []


def test_a_state_comes_back_from_disk_in_a_new_cache_on_the_same_folder(tmp_path):
    StateCache(tmp_path).put(KEY, 1, TOKENS, PAYLOAD, META)
    assert state_files(tmp_path) == ["conversation-1.kvstate"]
    assert StateCache(tmp_path).meta(KEY, 1) == META
    saved = StateCache(tmp_path).get(KEY, 1, TOKENS + [108])
    assert saved is not None and (saved.tokens, saved.payload, saved.meta) == (TOKENS, PAYLOAD, META)


def test_the_meta_is_read_without_the_payload(tmp_path, monkeypatch):
    StateCache(tmp_path).put(KEY, 1, TOKENS, PAYLOAD, META)
    path = tmp_path / "conversation-1.kvstate"
    path.write_bytes(path.read_bytes()[:-1] + b"!")  # a damaged payload: the head is still whole
    cache = StateCache(tmp_path)
    assert cache.meta(KEY, 1) == META and path.exists()
    assert cache.get(KEY, 1, TOKENS) is None and not path.exists()  # the payload is checked before use
    assert cache.meta(KEY, 1) is None


def test_a_prompt_equal_to_the_saved_tokens_uses_the_state(tmp_path):
    cache = StateCache(tmp_path)
    cache.put(KEY, 1, TOKENS, PAYLOAD)
    assert cache.get(KEY, 1, TOKENS) is not None


@pytest.mark.parametrize("prompt", [TOKENS[:-1], TOKENS[:3] + [999] + TOKENS[4:] + [5], [], [7] + TOKENS],
                         ids=["shorter", "differs-inside", "empty", "shifted"])
@pytest.mark.parametrize("tier", ["memory", "disk"])
def test_a_state_whose_tokens_do_not_begin_the_prompt_is_not_used_but_kept(tmp_path, prompt, tier):
    StateCache(tmp_path).put(KEY, 1, TOKENS, PAYLOAD)
    cache = StateCache(tmp_path, memory_budget=0) if tier == "disk" else StateCache(tmp_path)
    if tier == "memory":
        cache.put(KEY, 1, TOKENS, PAYLOAD)
    assert cache.get(KEY, 1, prompt) is None
    # Not damage: the conversation's next prompt may still begin with it.
    assert cache.get(KEY, 1, TOKENS + [1]) is not None


def test_each_conversation_has_its_own_state_and_a_put_replaces_the_one_before(tmp_path):
    cache = StateCache(tmp_path)
    cache.put(KEY, 1, TOKENS, payload(1))
    cache.put(KEY, 2, TOKENS[:3], payload(2))
    cache.put(KEY, 1, TOKENS + [9], payload(3))
    assert cache.get(KEY, 2, TOKENS).payload == payload(2)
    assert cache.get(KEY, 1, TOKENS + [9]).payload == payload(3)
    assert StateCache(tmp_path).get(KEY, 1, TOKENS + [9]).payload == payload(3)
    assert state_files(tmp_path) == ["conversation-1.kvstate", "conversation-2.kvstate"]


def test_discard_forgets_a_conversation_in_both_tiers(tmp_path):
    cache = StateCache(tmp_path)
    cache.put(KEY, 1, TOKENS, PAYLOAD)
    cache.put(KEY, 2, TOKENS, PAYLOAD)
    cache.discard(1)
    assert cache.get(KEY, 1, TOKENS) is None and state_files(tmp_path) == ["conversation-2.kvstate"]


# --- the key ------------------------------------------------------------------------------------


OTHER_VALUES = {"model_size": 1, "model_digest": "cd" * 32, "n_ctx": 2048, "kv_type": "k=q8_0 v=q8_0 fa=1 swa_full=1",
                "offloaded_layers": 19, "llama_version": "llama-cpp-python 0.3.37; llama.cpp 0.5.1; state 3/10"}


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(StateKey)])
@pytest.mark.parametrize("tier", ["memory", "disk"])
@pytest.mark.parametrize("asked", ["get", "meta"])
def test_a_state_saved_under_another_key_is_ignored_and_deleted(tmp_path, field, tier, asked):
    other = dataclasses.replace(KEY, **{field: OTHER_VALUES[field]})
    assert set(OTHER_VALUES) == {f.name for f in dataclasses.fields(StateKey)}
    cache = StateCache(tmp_path, memory_budget=0 if tier == "disk" else 1 << 20)
    cache.put(KEY, 1, TOKENS, PAYLOAD, META)
    assert (cache.get(other, 1, TOKENS) if asked == "get" else cache.meta(other, 1)) is None
    assert state_files(tmp_path) == []
    assert cache.get(KEY, 1, TOKENS) is None  # gone, not merely passed over


# --- budgets: least recently used out first ----------------------------------------------------


def test_memory_keeps_the_most_recently_used_states_within_its_budget(tmp_path):
    size = 10_000 + 4 * len(TOKENS)
    cache = StateCache(tmp_path, memory_budget=2 * size, disk_budget=0)
    cache.put(KEY, 1, TOKENS, payload(1))
    cache.put(KEY, 2, TOKENS, payload(2))
    assert cache.get(KEY, 1, TOKENS) is not None  # 1 is now the most recently used
    cache.put(KEY, 3, TOKENS, payload(3))  # over budget: 2 goes
    assert cache.get(KEY, 2, TOKENS) is None
    assert cache.get(KEY, 1, TOKENS).payload == payload(1) and cache.get(KEY, 3, TOKENS).payload == payload(3)
    assert cache.memory_size() == 2 * size


def test_disk_keeps_the_most_recently_used_files_within_its_budget(tmp_path):
    cache = StateCache(tmp_path, memory_budget=0)
    cache.put(KEY, 1, TOKENS, payload(1))
    file_size = (tmp_path / "conversation-1.kvstate").stat().st_size
    cache = StateCache(tmp_path, memory_budget=0, disk_budget=3 * file_size)
    now = time.time()
    for age, conversation in ((300, 1), (200, 2), (100, 3)):
        cache.put(KEY, conversation, TOKENS, payload(conversation))
        os.utime(tmp_path / f"conversation-{conversation}.kvstate", (now - age, now - age))
    assert cache.get(KEY, 1, TOKENS) is not None  # read now: 1 is the most recently used
    cache.put(KEY, 4, TOKENS, payload(4))  # over budget: 2, the least recently used, goes
    assert state_files(tmp_path) == ["conversation-1.kvstate", "conversation-3.kvstate", "conversation-4.kvstate"]
    assert cache.size_on_disk() == 3 * file_size
    cache.put(KEY, 5, TOKENS, payload(5))  # then 3
    assert state_files(tmp_path) == ["conversation-1.kvstate", "conversation-4.kvstate", "conversation-5.kvstate"]


def test_a_state_larger_than_a_tier_is_not_kept_there(tmp_path):
    cache = StateCache(tmp_path, memory_budget=5_000, disk_budget=5_000)
    cache.put(KEY, 1, TOKENS, payload(1, size=1_000))
    cache.put(KEY, 1, TOKENS, payload(1, size=20_000))  # replaces the small one: neither tier keeps it
    assert cache.get(KEY, 1, TOKENS) is None
    assert cache.memory_size() == 0 and cache.size_on_disk() == 0


# --- damaged, foreign and half-written files -----------------------------------------------------


def saved_file(tmp_path: Path) -> Path:
    StateCache(tmp_path).put(KEY, 1, TOKENS, PAYLOAD, META)
    return tmp_path / "conversation-1.kvstate"


HEADER = "<8sIIQQQ32s32s"


def with_header(data: bytes, **changes) -> bytes:
    names = ["magic", "version", "key_length", "tokens", "meta_length", "payload_length", "head_sum", "payload_sum"]
    values = list(struct.unpack_from(HEADER, data))
    for name, value in changes.items():
        values[names.index(name)] = value
    return struct.pack(HEADER, *values) + data[kv_file.HEADER_BYTES:]


def flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1:]


DAMAGES = {
    "empty": lambda data: b"",
    "cut-in-header": lambda data: data[:40],
    "cut-in-key": lambda data: data[:kv_file.HEADER_BYTES + 10],
    "cut-in-tokens": lambda data: data[:len(data) - len(PAYLOAD) - len(META) - 3],
    "cut-in-meta": lambda data: data[:len(data) - len(PAYLOAD) - 2],
    "cut-in-payload": lambda data: data[:-1],
    "padded": lambda data: data + b"\0",
    "payload-byte-flipped": lambda data: flip(data, len(data) - 100),
    "meta-byte-flipped": lambda data: flip(data, len(data) - len(PAYLOAD) - 1),
    "token-byte-flipped": lambda data: flip(data, len(data) - len(PAYLOAD) - len(META) - 4),
    "key-byte-flipped": lambda data: flip(data, kv_file.HEADER_BYTES + 5),
    "head-checksum-flipped": lambda data: flip(data, 40),
    "payload-checksum-flipped": lambda data: flip(data, 72),
    "meta-and-payload-lengths-swapped": lambda data: with_header(data, meta_length=len(PAYLOAD),
                                                                  payload_length=len(META)),
    "garbage": lambda data: os.urandom(len(data)),
    "wrong-magic": lambda data: with_header(data, magic=b"GGUF\0\0\0\0"),
    "newer-format": lambda data: with_header(data, version=kv_file.FORMAT_VERSION + 1),
    # Lengths that would make a careless reader allocate without bound:
    "claims-2^60-tokens": lambda data: with_header(data, tokens=1 << 60),
    "claims-2^62-payload": lambda data: with_header(data, payload_length=1 << 62),
    "claims-2^63-meta": lambda data: with_header(data, meta_length=1 << 63),
    "meta-and-payload-wrap-around": lambda data: with_header(data, meta_length=(1 << 64) - 5, payload_length=10),
    "claims-huge-key": lambda data: with_header(data, key_length=0xFFFFFFFF),
    "more-tokens-than-the-context": lambda data: with_header(data, tokens=KEY.n_ctx + 1),
}


PAYLOAD_ONLY = {"payload-byte-flipped", "payload-checksum-flipped"}  # the head (tokens, meta) still whole


@pytest.mark.parametrize("damage", DAMAGES.keys())
def test_a_damaged_or_foreign_file_is_ignored_and_deleted(tmp_path, damage):
    path = saved_file(tmp_path)
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    cache = StateCache(tmp_path)
    assert cache.get(KEY, 1, TOKENS + [1]) is None
    assert not path.exists()


@pytest.mark.parametrize("damage", DAMAGES.keys())
def test_the_meta_of_a_damaged_file_is_never_handed_out(tmp_path, damage):
    path = saved_file(tmp_path)
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    meta = StateCache(tmp_path).meta(KEY, 1)
    if damage in PAYLOAD_ONLY:
        assert meta == META and path.exists()  # get() checks the payload before handing it out
    else:
        assert meta is None and not path.exists()


def test_a_file_that_adds_up_but_claims_more_payload_than_the_budget_is_deleted_unread(tmp_path):
    path = saved_file(tmp_path)
    assert StateCache(tmp_path, memory_budget=0, disk_budget=len(PAYLOAD) - 1).get(KEY, 1, TOKENS) is None
    assert not path.exists()


def test_a_fifo_under_a_state_name_does_not_hang_the_engine(tmp_path):
    os.mkfifo(tmp_path / "conversation-1.kvstate")  # reading one would wait for a writer forever
    cache = StateCache(tmp_path)
    assert cache.meta(KEY, 1) is None and cache.get(KEY, 1, TOKENS) is None


def test_a_link_in_the_cache_folder_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    folder = tmp_path / "cache"
    target = saved_file(elsewhere)
    (folder).mkdir()
    (folder / "conversation-1.kvstate").symlink_to(target)
    assert StateCache(folder).get(KEY, 1, TOKENS) is None
    assert not (folder / "conversation-1.kvstate").is_symlink() and target.exists()


def test_a_folder_under_a_state_name_is_survived(tmp_path):
    (tmp_path / "conversation-1.kvstate").mkdir()
    cache = StateCache(tmp_path)
    assert cache.get(KEY, 1, TOKENS) is None
    cache.put(KEY, 1, TOKENS, PAYLOAD)  # cannot replace a folder: logged, kept in memory
    assert cache.get(KEY, 1, TOKENS) is not None


def test_a_write_that_fails_leaves_no_file_and_no_temporary(tmp_path, monkeypatch):
    cache = StateCache(tmp_path, memory_budget=0)
    cache.put(KEY, 1, TOKENS, payload(1))

    def crash(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kv_file.os, "replace", crash)
    cache.put(KEY, 1, TOKENS + [5], payload(2))  # never raises to the engine
    assert os.listdir(tmp_path) == []  # the older state is stale now: deleted too
    assert cache.get(KEY, 1, TOKENS + [5]) is None


def leftover_temporary(tmp_path: Path, age: float) -> Path:
    """A whole state file left under the temporary name a writer uses, as if it died before the rename."""
    path = saved_file(tmp_path)
    temporary = tmp_path / ".conversation-1.kvstate.4242.0badcafe.tmp"
    os.replace(path, temporary)
    past = time.time() - age
    os.utime(temporary, (past, past))
    return temporary


def test_a_leftover_temporary_file_is_never_loaded_and_is_cleaned_up(tmp_path):
    temporary = leftover_temporary(tmp_path, age=3600)
    cache = StateCache(tmp_path)
    assert cache.get(KEY, 1, TOKENS) is None
    assert not temporary.exists()


def test_a_fresh_temporary_file_is_left_to_its_writer_but_never_loaded(tmp_path):
    temporary = leftover_temporary(tmp_path, age=0)  # another process may be about to rename it
    cache = StateCache(tmp_path)
    assert cache.get(KEY, 1, TOKENS) is None
    assert temporary.exists()
    assert cache.size_on_disk() == temporary.stat().st_size


def test_clear_deletes_every_state_and_temporary_but_nothing_else(tmp_path):
    leftover_temporary(tmp_path, age=0)
    (tmp_path / "notes.txt").write_text("the user's")
    cache = StateCache(tmp_path)
    cache.put(KEY, 1, TOKENS, PAYLOAD)
    cache.put(KEY, 2, TOKENS, PAYLOAD)
    assert cache.size_on_disk() > 2 * len(PAYLOAD)
    cache.clear()
    assert cache.size_on_disk() == 0 and cache.memory_size() == 0
    assert os.listdir(tmp_path) == ["notes.txt"]
    assert cache.get(KEY, 1, TOKENS) is None


def test_an_engine_thread_and_a_gui_thread_can_share_a_cache(tmp_path):
    """The engine saves and restores while the settings page asks the size and clears."""
    cache = StateCache(tmp_path, memory_budget=50_000, disk_budget=80_000)
    failures: list[BaseException] = []

    def engine():
        try:
            for round_ in range(150):
                conversation = round_ % 7
                cache.put(KEY, conversation, TOKENS + [round_], payload(round_))
                saved = cache.get(KEY, conversation, TOKENS + [round_, 1])
                assert saved is None or saved.payload == payload(round_)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failures.append(exc)

    thread = threading.Thread(target=engine)
    thread.start()
    while thread.is_alive():
        assert cache.size_on_disk() <= 80_000 + 20_000  # a temporary beside a full budget at most
        cache.clear()
    thread.join()
    assert failures == []
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


# --- the model file's identity ------------------------------------------------------------------


def test_a_model_copied_elsewhere_keeps_its_identity_and_any_change_is_another(tmp_path):
    from support.model_files.gguf_corpus import tiny_llama

    original = tiny_llama().write(tmp_path / "a.gguf")
    moved = shutil.copy(original, tmp_path / "renamed.gguf")
    renamed_model = tiny_llama(name="Tiny Llama 2").write(tmp_path / "b.gguf")
    weights_changed = tmp_path / "c.gguf"
    data = bytearray(original.read_bytes())
    data[-10] ^= 0xFF  # the last sample page lies at the end of the data section
    weights_changed.write_bytes(bytes(data))
    assert model_fingerprint(moved) == model_fingerprint(original)
    assert model_fingerprint(renamed_model) != model_fingerprint(original)
    assert model_fingerprint(weights_changed) != model_fingerprint(original)


@pytest.mark.parametrize("content", [b"", b"GGUF", b"not a model at all" * 10, b"GGUF\x03\0\0\0" + b"\xff" * 16])
def test_a_file_that_is_no_gguf_has_no_fingerprint(tmp_path, content):
    path = tmp_path / "x.gguf"
    path.write_bytes(content)
    with pytest.raises(NoFingerprint):
        model_fingerprint(path)


# --- the real model: Gemma 3 270M, whose cache has sliding-window layers ------------------------------


N_CTX = 1024


@dataclasses.dataclass(frozen=True)
class Restoring:
    saver: object  # a Llama that evaluated the history, saved its state, then read the new turn
    fresh: object  # another Llama, to restore into
    history: list[int]  # a conversation longer than Gemma's 512-token window, ending with a reply
    prompt: list[int]  # the history and the next user turn
    payload: bytes  # the saver's state after the history (kv_seq.save)
    expected: object  # the saver's logits at the end of the new turn


@pytest.fixture(scope="module")
def gemma(gemma_path, gemma_info):
    """Two contexts on the default model set up as the engine's (its window cache); the history (about
    570 tokens: past the 512-token window, so a restored state lacks its start) is evaluated
    once for every test here (two seconds on one core)."""
    from llama_cpp import Llama

    from app.engine.llama import kv_seq
    from app.engine.llama.devices import cpu_threads
    from app.engine.memory_plan import WHOLE_WINDOW_CACHE
    from app.engine.templates.chat_template import template_for

    threads = cpu_threads()
    contexts = [Llama(model_path=str(gemma_path), n_ctx=N_CTX, n_threads=threads.generate,
                      n_threads_batch=threads.prompt, swa_full=WHOLE_WINDOW_CACHE, verbose=False) for _ in range(2)]
    template = template_for(gemma_info)
    messages = [{"role": "system", "content": "Answer briefly."}]
    for index in range(8):
        messages.append({"role": "user", "content": f"Tell me one fact about the number {index}."})
        messages.append({"role": "assistant", "content": f"The number {index} comes after {index - 1} and before "
                                                         f"{index + 1}; it is {'even' if index % 2 == 0 else 'odd'}. " * 3})
    history_text = template.render(messages, add_generation_prompt=False)
    prompt_text = template.render(messages + [{"role": "user", "content": "Which of them is the largest?"}])
    tokenize = contexts[0].tokenize
    history = tokenize(history_text.encode(), add_bos=False, special=True)
    prompt = tokenize(prompt_text.encode(), add_bos=False, special=True)
    assert prompt[:len(history)] == history and 512 + 50 < len(history) < N_CTX - 100
    saver, fresh = contexts
    saver.eval(history)
    payload = kv_seq.save(saver)
    yield Restoring(saver, fresh, history, prompt, payload, first_logits(saver, prompt[len(history):]))
    for context in contexts:
        context.close()


def first_logits(llm, tokens: list[int]):
    """Evaluate `tokens` after what the context holds: the logits at the last of them."""
    import numpy as np
    from llama_cpp import llama_cpp as llama_c

    llm.eval(tokens)
    return np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()


def test_a_state_restored_from_disk_holds_exactly_what_was_saved(gemma, tmp_path):
    from app.engine.gguf.fingerprint import model_fingerprint
    from app.engine.llama import kv_seq

    fingerprint = model_fingerprint(gemma.saver.model_path)
    key = StateKey(fingerprint.size, fingerprint.digest, N_CTX, kv_seq.cache_layout(gemma.saver), 0,
                   kv_seq.build_identity())
    StateCache(tmp_path).put(key, 1, gemma.history, gemma.payload)

    saved = StateCache(tmp_path).get(key, 1, gemma.prompt)  # a new cache: read from disk, as after a restart
    assert saved is not None and saved.tokens == gemma.history
    fresh = gemma.fresh
    assert kv_seq.restore(fresh, saved.tokens, saved.payload)
    assert fresh.n_tokens == len(gemma.history) and list(fresh.input_ids[:fresh.n_tokens]) == gemma.history
    assert kv_seq.save(fresh) == gemma.payload  # every cell, position and value, byte for byte


def test_the_new_turn_after_a_restore_reads_as_in_the_context_that_saved_it(gemma):
    """The new turn's logits after a restore are those of the context that saved the state
    (bit for bit here; llama.cpp promises no more than float rounding across cache layouts,
    as between a warm and a cold prompt). An empty cache instead is far off: the control."""
    import numpy as np

    from app.engine.llama import kv_seq

    fresh, history, new_turn = gemma.fresh, gemma.history, gemma.prompt[len(gemma.history):]
    assert kv_seq.restore(fresh, history, gemma.payload)
    restored = first_logits(fresh, new_turn)
    fresh.reset()
    fresh._ctx.kv_cache_seq_rm(-1, 0, -1)
    fresh.n_tokens = len(history)  # positions as if restored, but no history in the cache
    without_history = first_logits(fresh, new_turn)
    assert np.argmax(restored) == np.argmax(gemma.expected)
    assert np.abs(restored - gemma.expected).max() < 0.01
    assert np.abs(without_history - gemma.expected).max() > 5


def test_a_restored_sliding_window_state_is_reused_only_from_its_end(gemma):
    """llama.cpp saves the sliding-window layers' last n_swa positions only (Gemma 3: 512), so a
    restored state extends, or re-evaluates its last token, but is not cut back further: the
    re-evaluated tokens would miss window positions. The engine's own context keeps them all."""
    from app.engine.llama import kv_seq

    saver, fresh, history = gemma.saver, gemma.fresh, gemma.history
    assert all(kv_seq.can_reuse(saver, n_past) for n_past in (1, 10, len(history) - 300, len(history)))
    assert kv_seq.restore(fresh, history, gemma.payload)
    assert kv_seq.can_reuse(fresh, len(history)) and kv_seq.can_reuse(fresh, len(history) - 1)
    assert not kv_seq.can_reuse(fresh, len(history) - 2) and not kv_seq.can_reuse(fresh, 10)


def test_llama_cpp_refuses_a_payload_that_is_not_its_state(gemma):
    from app.engine.llama import kv_seq

    fresh, payload = gemma.fresh, gemma.payload
    assert not kv_seq.restore(fresh, gemma.history, payload[: len(payload) // 2])
    assert fresh.n_tokens == 0 and not kv_seq.can_reuse(fresh, 1)


# --- the engine's token segments, saved as the meta -------------------------------------------------


def test_token_segments_come_back_as_they_were_saved():
    from app.engine.kv.segments import Segment, decode, encode

    segments = [Segment(b"<bos><start_of_turn>user\nHi<end_of_turn>\n", [2, 105, 2364, 107, 10979, 106, 107], None, False),
                Segment(" Hello there".encode(), [26352, 993], [b" Hello", b" there"], True),
                Segment(b"", [], [], False)]
    assert decode(encode(segments)) == segments


@pytest.mark.parametrize("meta", [b"", b"\x01\0\0", b"\xff\xff\xff\xff" + b"\0" * 20,
                                  b"\x01\0\0\0" + b"\x04" + b"\0" * 12,  # unknown flags
                                  b"\x01\0\0\0\x00" + (1 << 62).to_bytes(8, "little") + b"\0" * 4,  # text longer than all
                                  b"\x01\0\0\0\x00" + b"\0" * 8 + b"\xff\xff\xff\x7f",  # more tokens than bytes
                                  b"\x00\0\0\0" + b"extra"],
                         ids=["empty", "short-count", "2^32-segments", "flags", "huge-text", "huge-token-count", "left-over"])
def test_malformed_segments_are_refused_without_allocating(meta):
    from app.engine.kv.segments import decode

    with pytest.raises(ValueError):
        decode(meta)
