"""Run a model: load it, turn a conversation into tokens, and stream a reply.

`Engine` owns one `llama_cpp.Llama` and drives it with llama.cpp's own primitives (decode,
a native sampler chain) rather than `Llama.generate`, for four reasons:
- the prompt is evaluated in `n_batch` slices with a cancel check between them, so even a
  long prompt can be stopped (llama-cpp-python has no cancel API);
- logit bias is a native llama.cpp sampler, not a per-token numpy pass over the vocabulary;
- the repeat-penalty window and the seed are per reply, not per model;
- token pieces are read with a buffer that grows, because llama-cpp-python's 32-byte buffer
  returns longer pieces empty (upstream #2362).

Prompt-lookup decoding (on unless SamplingParams.draft says none): where the reply's last
tokens appeared earlier in the conversation, the tokens that followed them there are checked
as a guess in the same decode as the token before them (engine/lookup.py guesses,
draft_verifier.py checks), and each kept only where the sampler picks it, so a reply that
copies its input comes several tokens per decode, and one that does not costs what it did.

Prefix reuse: the engine remembers the token sequence it last evaluated as text segments
(the prompt, then the reply exactly as generated). The next prompt reuses those tokens for
as long as its text starts with the same segments, and the KV cache keeps everything up to
the first differing token, so turn N+1 evaluates only what is new.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import io
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c
from llama_cpp._internals import LlamaSampler

from ..backend import Backend, LoadCancelled, PromptProgress
from ..context import Fitted, fit_conversation
from ..gguf.fingerprint import NoFingerprint, model_fingerprint
from ..gguf.modelfile import ModelFileError, ModelInfo, inspect_model
from ..kv import segments as kv_segments
from ..kv.cache import StateCache, StateKey
from ..lookup import DraftStats
from ..memory_plan import gpu_layers_for
from ..sampling import Drafting, SamplingParams
from ..stops import StopStringMatcher
from ..templates.chat_template import ChatTemplate, TemplateError, template_for
from ..types import DeviceInfo, LoadOptions, LocalModel, ModelDescription, ReplyStats, StopReason
from . import kv_seq, load_params
from . import log_shim as llama_log
from .devices import cpu_threads, offload_support, supports_gpu_offload
from .draft_verifier import DraftVerifier
from .load_checks import check_load_options, flash_attention_for, memlock_limit, mlock_refused_note
from .machine import free_vram

log = logging.getLogger(__name__)

DEFAULT_CONTEXT = 4096


class Engine(Backend):
    """One model loaded by llama.cpp. Not thread-safe: one thread (the worker) drives it."""

    def __init__(
        self,
        path: str | Path,
        options: LoadOptions = LoadOptions(),
        progress: Callable[[float], None] | None = None,
        cancel: threading.Event | None = None,
        states: StateCache | None = None,
    ):
        self.info: ModelInfo = inspect_model(path)
        check_load_options(options)  # before a byte of the weights is read
        self.options = options
        self.load_notes: tuple[str, ...] = ()  # what the load could not do as asked (ModelDescription)
        self.template: ChatTemplate = template_for(self.info, options.template_override)
        llama_log.install()
        self._llm = self._load(progress, cancel)
        self._vocab = self._llm._model.vocab
        self._n_vocab = llama_c.llama_vocab_n_tokens(self._vocab)
        self.n_ctx = self._llm.n_ctx()
        self.stop_token_ids, self._eog_text_tokens = self._end_of_generation_ids()
        self._add_bos = bool(llama_c.llama_vocab_get_add_bos(self._vocab))
        self._bos_id = llama_c.llama_vocab_bos(self._vocab)
        # SentencePiece vocabs with a space prefix tokenize "\n" as ["▁", "\n"]; see tokenize().
        self._newline_tokens = self._llm.tokenize(b"\n", add_bos=False, special=False)
        self._segments: list[_Segment] = []
        self._last_fit: tuple[int, list[dict]] = (0, [])  # its budget, and the turns it left out
        self._piece_buffer = ctypes.create_string_buffer(64)
        self.last_draft_stats: DraftStats | None = None  # the last reply's drafting (None: it did not draft)
        # Saved KV state (kv_state.py): the conversation whose tokens the KV cache holds, whether
        # its state is saved as it is now, whether to look for its saved state at the next prompt,
        # and its last reply's fitted messages and text (to save the conversation as the next
        # prompt will render it).
        self._states = states
        self._state_key: StateKey | None = None
        self._owner: int | None = None
        self._owner_saved = True
        self._restore = False
        self._last_exchange: tuple[list[dict], str] | None = None

    # --- loading -----------------------------------------------------------------------------

    def _load(self, progress, cancel) -> Llama:
        info, options = self.info, self.options
        n_ctx = options.n_ctx or min(info.context_length or DEFAULT_CONTEXT, DEFAULT_CONTEXT)
        gpu = supports_gpu_offload()
        n_gpu_layers = gpu_layers_for(info.path, options, offloads=gpu, free_vram=free_vram)
        total_layers = (info.block_count or 0) + 1  # the output layer counts too
        offloaded = total_layers if n_gpu_layers < 0 else min(n_gpu_layers, total_layers)
        threads = cpu_threads()
        generate_threads = options.n_threads or threads.generate
        self.device = DeviceInfo("CUDA" if gpu else "CPU", offloaded, total_layers, generate_threads,
                                 reason=None if gpu else offload_support().reason)

        def on_progress(fraction: float) -> bool:
            if progress is not None:
                progress(fraction)
            return not (cancel is not None and cancel.is_set())

        # verbose=True: verbose=False makes llama-cpp-python os.dup() stdout, which does not
        # exist in a windowed app. Its Python-side prints go to the log instead of stderr.
        chatter = _LogWriter(logging.getLogger("llama_cpp.python"))
        try:
            flash_attn = flash_attention_for(options, offloaded)
            with (load_params.loading(replace(options, flash_attn=flash_attn), on_progress) as report,
                  contextlib.redirect_stderr(chatter),
                  contextlib.redirect_stdout(chatter)):
                llm = Llama(
                    model_path=str(info.path),
                    n_ctx=n_ctx,
                    n_gpu_layers=n_gpu_layers,
                    n_threads=generate_threads,
                    n_threads_batch=options.n_threads or threads.prompt,
                    swa_full=True,  # keep the whole sliding-window cache, or Gemma 3 can't reuse prefixes
                    verbose=True,
                    **load_params.llama_arguments(options),
                )
        except ValueError as exc:
            if cancel is not None and cancel.is_set():
                raise LoadCancelled(f"Loading {info.path.name} was cancelled.") from None
            raise ModelFileError(
                f"llama.cpp could not load {info.path.name}: {exc}. See the log for details."
            ) from None
        load_params.record_applied(llm, report)
        if report.mlock_refused:
            note = mlock_refused_note(info.path.stat().st_size, memlock_limit())
            log.warning("%s", note)
            self.load_notes = (note,)
        log.info("loaded %s: n_ctx=%d device=%s cache=%s", info.path, n_ctx, self.device.describe(),
                 kv_seq.cache_layout(llm))
        return llm

    def _end_of_generation_ids(self) -> tuple[frozenset[int], frozenset[int]]:
        """llama.cpp's end-of-generation set, plus the family end-of-turn tokens in the file;
        and the tokens llama.cpp flags as end-of-generation that stay text.

        llama.cpp also flags tokens as end-of-generation by their text alone ("</s>"), and
        retypes them as control, even where the file types them as ordinary text: Gemma 3's
        and Phi-3's "</s>" is an HTML tag, Qwen's a BPE word. Those stay text (see
        modelfile.END_OF_TURN_TEXTS): they neither end a reply nor vanish from it.
        """
        ids = {t.id for t in self.info.end_of_turn}
        eog = {i for i in range(self._n_vocab) if llama_c.llama_vocab_is_eog(self._vocab, i)}
        control = set(self.info.special_tokens.values())
        # A file without token types gives nothing to go by: trust llama.cpp.
        text_tokens = frozenset(eog - control - ids) if control else frozenset()
        ids.update(eog - text_tokens)
        return frozenset(ids), text_tokens

    def describe(self) -> ModelDescription:
        return ModelDescription(LocalModel(self.info.path), self.info, self.device, self.n_ctx, self.template.name,
                                load_notes=self.load_notes)

    def close(self) -> None:
        self.keep_state()
        self._llm.close()

    def set_template_override(self, source: str | None) -> str:
        """Use another chat template from the next reply on (None: the model's own)."""
        self.template = template_for(self.info, source)
        return self.template.name

    # --- prompts -------------------------------------------------------------------------------

    def render(self, messages: list[dict]) -> str:
        return self.template.render(messages, add_generation_prompt=True)

    def tokenize(self, text: str, at_start: bool = True, after_text: bool = False) -> list[int]:
        """Tokenize prompt text, parsing special-token text, with exactly one leading BOS.

        `after_text`: the text continues a prompt whose last token is ordinary text. llama.cpp's
        SentencePiece tokenizer puts a "▁" before every text it starts, as at the start of a
        prompt (and after a special token, as Hugging Face's does); in the middle of text that
        space is not in the prompt. Starting the text after a newline (a byte token, which
        merges with nothing) and dropping the newline's tokens gives the in-place tokens.
        """
        if after_text and len(self._newline_tokens) > 1:
            marked = self._llm.tokenize(b"\n" + text.encode("utf-8"), add_bos=False, special=True)
            if marked[: len(self._newline_tokens)] == self._newline_tokens:
                return marked[len(self._newline_tokens):]
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if not at_start:
            return tokens
        bos = self._bos_id
        while len(tokens) >= 2 and tokens[0] == bos and tokens[1] == bos:
            tokens.pop(0)  # a template that writes BOS and a tokenizer that adds one
        if self._add_bos and bos >= 0 and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def prompt_tokens(self, messages: list[dict]) -> list[int]:
        """The prompt's tokens, reusing the previous turn's tokens where the text still matches."""
        return self._tokens_with_reuse(self.render(messages))[0]

    def _tokens_with_reuse(self, text: str) -> tuple[list[int], list[_Segment]]:
        data = text.encode("utf-8")
        tokens: list[int] = []
        segments: list[_Segment] = []
        position = 0
        for segment in self._segments:
            taken = segment.match(data, position)
            if taken.tokens:
                tokens += taken.tokens
                segments.append(taken)
                position += len(taken.data)
            if taken is not segment:
                break
        if position < len(data):
            rest = data[position:]
            after_text = bool(tokens) and not self._is_special(tokens[-1])
            rest_tokens = self.tokenize(rest.decode("utf-8"), at_start=position == 0, after_text=after_text)
            tokens += rest_tokens
            segments.append(_Segment(rest, rest_tokens))
        return tokens, segments

    def _is_special(self, token: int) -> bool:
        """Whether llama.cpp's tokenizer treats the token as special (matched by its text)."""
        attr = llama_c.llama_vocab_get_attr(self._vocab, token)
        return bool(attr & (llama_c.LLAMA_TOKEN_ATTR_CONTROL | llama_c.LLAMA_TOKEN_ATTR_USER_DEFINED
                            | llama_c.LLAMA_TOKEN_ATTR_UNKNOWN))

    def fit(self, messages: list[dict], max_tokens: int) -> Fitted:
        return self._fit(messages, max_tokens)[0]

    def _fit(self, messages: list[dict], max_tokens: int) -> tuple[Fitted, list[_Segment]]:
        """Fit the conversation, keeping the token segments of the prompt that fitted, so it
        need not be tokenized again, and which turns were dropped, to drop the same next time."""
        measured: dict[int, list[_Segment]] = {}  # by the candidate's message count

        def tokenize(candidate: list[dict]) -> list[int]:
            tokens, measured[len(candidate)] = self._tokens_with_reuse(self.render(candidate))
            return tokens

        budget = self.n_ctx - max_tokens
        last_budget, dropped_before = self._last_fit
        fitted = fit_conversation(messages, tokenize, budget, dropped_before if budget == last_budget else None)
        self._last_fit = (budget, fitted.dropped)
        return fitted, measured[len(fitted.messages)]

    # --- generation ----------------------------------------------------------------------------

    def stream(
        self,
        messages: list[dict],
        params: SamplingParams = SamplingParams(),
        cancel: threading.Event | None = None,
        prompt_progress: PromptProgress | None = None,
        conversation_id: int | None = None,
    ) -> Iterator[str | ReplyStats]:
        """Yield text chunks of the reply, then one ReplyStats. Never raises mid-reply.

        Template and context errors raise before the first yield, so a caller sees them as
        a failed request rather than a half-finished reply. `prompt_progress(done, total)` is
        called after each batch of prompt tokens evaluated when there is more than one batch
        to read: a long prompt on a CPU takes seconds before the first token, and a user
        deserves to see why (one batch goes by too fast to show).

        `conversation_id`: the stored conversation this reply belongs to (None: a served job or
        a one-off chat). Switching to another one saves the KV state of the one left; reopening
        one restores its saved state, so only its new tokens are evaluated.
        """
        self._switch_to(conversation_id)
        cancel = cancel or threading.Event()
        max_tokens = min(params.max_tokens, self.n_ctx - 1)
        fitted, segments = self._fit(messages, max_tokens)
        prompt = fitted.prompt_tokens
        stats = ReplyStats(
            prompt_tokens=len(prompt), dropped_messages=fitted.dropped_messages, seed=params.resolved_seed()
        )
        self._owner_saved, self._last_exchange = False, None
        return self._remembering(fitted.messages, self._generate(prompt, segments, params, stats, cancel, max_tokens,
                                                                 prompt_progress))

    def _remembering(self, messages: list[dict], events: Iterator[str | ReplyStats]) -> Iterator[str | ReplyStats]:
        """The events, passed on; the exchange kept for keep_state as the reply ends: before its
        ReplyStats is passed on, since a consumer stops there (Backend.stream)."""
        shown: list[str] = []
        for event in events:
            if isinstance(event, ReplyStats):
                self._last_exchange = (messages, "".join(shown))
            else:
                shown.append(event)
            yield event

    # --- saved KV state ------------------------------------------------------------------------

    def _switch_to(self, conversation_id: int | None) -> None:
        """Before a reply in `conversation_id`: keep the state of the conversation the cache
        holds if that is another, and take up the saved segments of this one, to tokenize its
        prompt as its saved tokens were (_evaluate_prompt then restores the state itself)."""
        if conversation_id == self._owner:
            return
        self.keep_state()
        self._owner, self._owner_saved, self._restore, self._last_exchange = conversation_id, True, False, None
        key = self._key()
        if conversation_id is None or key is None:
            return
        try:
            saved = [_Segment(s.data, s.tokens, s.pieces, s.shown_without_space)
                     for s in kv_segments.decode(self._states.meta(key, conversation_id) or b"")]
        except ValueError:
            return  # none saved (or not readable): the prompt is evaluated
        self._segments, self._restore = saved, True

    def prepare(self, conversation_id: int | None) -> None:
        """The user opened `conversation_id`: keep the state of the conversation the cache holds,
        and put this one's saved state into the context now, while the user reads and types,
        so that their next Send evaluates only the new turn. The saved tokens are its segments'
        (kv_segments), so the state is read with them as the prompt it must begin."""
        self._switch_to(conversation_id)
        if not self._restore:
            return
        self._restore = False
        tokens = [token for segment in self._segments for token in segment.tokens]
        saved = self._states.get(self._key(), conversation_id, tokens)
        if saved is None or not kv_seq.restore(self._llm, saved.tokens, saved.payload):
            self._llm.reset()  # the next prompt is evaluated whole

    def keep_state(self) -> None:
        """Save the KV state of the conversation the cache holds, as its next prompt will begin:
        the last exchange rendered as a finished turn (its closing markers evaluated, the reply
        as the template writes it back). Called when the user leaves the conversation
        (`prepare` for another, closing the model: a load, quitting) and before a reply in
        another conversation, or a served job. Costs tens of milliseconds for a few
        thousand tokens of a small model, on the engine thread."""
        key = self._key()
        if self._owner_saved or self._owner is None or key is None or self._last_exchange is None:
            return
        self._owner_saved = True
        messages, reply = self._last_exchange
        try:
            text = self.template.render(messages + [{"role": "assistant", "content": reply}], add_generation_prompt=False)
        except TemplateError:
            return  # a template that will not end on a reply: nothing to save
        tokens, segments = self._tokens_with_reuse(text)
        if not tokens or len(tokens) >= self.n_ctx:
            return
        try:
            self._evaluate_prompt(tokens, threading.Event())
            payload = kv_seq.save(self._llm)
        except Exception:  # llama.cpp failed: the state is not saved, the next prompt is evaluated
            log.exception("could not save the KV state of conversation %d", self._owner)
            self._llm.reset()
            return
        self._segments = segments
        meta = kv_segments.encode([kv_segments.SavedSegment(s.data, s.tokens, s.pieces, s.shown_without_space)
                                   for s in segments])
        self._states.put(key, self._owner, tokens, payload, meta)

    def forget_state(self, conversation_id: int) -> None:
        """The conversation was deleted: its saved state goes, and the state the cache holds
        now is not saved for it when the user moves on."""
        if conversation_id == self._owner:
            self._owner, self._owner_saved, self._last_exchange = None, True, None
        if self._states is not None:
            self._states.discard(conversation_id)

    def _key(self) -> StateKey | None:
        """What the saved states of this engine are keyed by (None: no cache, or the file cannot
        be fingerprinted); computed when first needed (it reads the model's header again)."""
        if self._states is None:
            return None
        if self._state_key is None:
            try:
                fingerprint = model_fingerprint(self.info.path)
            except NoFingerprint as exc:
                log.warning("saved KV state is off for this model: %s", exc)
                self._states = None
                return None
            self._state_key = StateKey(fingerprint.size, fingerprint.digest, self.n_ctx, kv_seq.cache_layout(self._llm),
                                       self.device.gpu_layers, kv_seq.build_identity())
        return self._state_key

    def _generate(self, prompt, segments, params, stats, cancel, max_tokens, prompt_progress):
        started = time.perf_counter()
        reply_tokens: list[int] = []
        reply_pieces: list[bytes] = []
        strip_space = self.info.add_space_prefix
        stripped_space = False
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = StopStringMatcher(params.stop)
        first_token_at = last_token_at = None
        verifier = None
        self.last_draft_stats = None
        try:
            stats.evaluated_prompt_tokens = self._evaluate_prompt(prompt, cancel, prompt_progress)
            sampler = self._sampler(params, stats.seed)
            verifier = DraftVerifier(self._llm, prompt if self._drafts(params) else None)
            index = -1  # the logits the next token is sampled from: the batch row before it
            stats.stop_reason = StopReason.LENGTH
            while len(reply_tokens) < max_tokens:
                if cancel.is_set():
                    stats.stop_reason = StopReason.CANCELLED
                    break
                if verifier.evaluated >= self.n_ctx:
                    break  # the window is full: stop with "length"
                token = sampler.sample(self._llm._ctx, index)
                last_token_at = time.perf_counter()
                if first_token_at is None:
                    first_token_at = last_token_at
                    stats.ttft_s = first_token_at - started
                if token in self.stop_token_ids:
                    stats.stop_reason = StopReason.END_OF_TURN
                    break
                reply_tokens.append(token)
                piece = self._piece(token)
                reply_pieces.append(piece)
                shown = piece
                if len(reply_tokens) == 1 and strip_space and piece.startswith(b" "):
                    shown = piece[1:]  # SentencePiece's word-start space, as HF's decode drops it
                    stripped_space = True
                text, stopped = stops.feed(decoder.decode(shown))
                if text:
                    yield text
                if stopped:
                    stats.stop_reason = StopReason.STOP_STRING
                    break
                index = verifier.advance(token, max_tokens - len(reply_tokens))
            tail = stops.flush(decoder.decode(b"", final=True)) if stats.stop_reason is not StopReason.STOP_STRING else ""
            if tail:
                yield tail
        except Exception as exc:  # llama.cpp decode failure (e.g. out of memory)
            log.exception("generation failed")
            stats.stop_reason = StopReason.ERROR
            stats.error = f"The model failed while generating: {exc}"
        finally:
            if verifier is not None:
                verifier.finish()
                self.last_draft_stats = verifier.draft_stats
                if self.last_draft_stats is not None:
                    log.debug("drafting: %s", self.last_draft_stats)
            stats.completion_tokens = len(reply_tokens)
            if first_token_at is not None and last_token_at is not None and len(reply_tokens) > 1:
                stats.tokens_per_s = (len(reply_tokens) - 1) / max(last_token_at - first_token_at, 1e-9)
            self._segments = segments + [_Segment(b"".join(reply_pieces), reply_tokens, reply_pieces, stripped_space)]
        yield stats

    def _evaluate_prompt(self, prompt: list[int], cancel: threading.Event, progress=None) -> int:
        """Decode the prompt tokens not already in the KV cache and return how many there were.

        Cancelling stops between batches; the generation loop then sees the flag at once.
        """
        llm = self._llm
        common = _common_prefix(llm.input_ids[: llm.n_tokens], prompt)
        if self._restore:  # the conversation was switched to: its saved state, if it begins the prompt
            self._restore = False
            saved = self._states.get(self._key(), self._owner, prompt)
            if saved is not None and len(saved.tokens) > common:
                common = len(saved.tokens) if kv_seq.restore(llm, saved.tokens, saved.payload) else 0
        common = min(common, len(prompt) - 1)  # re-decode at least one token for fresh logits
        # A restored sliding-window cache holds only the window: it can be cut back one token.
        if common <= 0 or not kv_seq.can_reuse(llm, common) or not llm._ctx.kv_cache_seq_rm(-1, common, -1):
            llm.reset()
            common = 0
        llm.n_tokens = common
        if len(prompt) - common <= llm.n_batch:
            progress = None  # one batch goes by too fast to show
        for start in range(common, len(prompt), llm.n_batch):
            if cancel.is_set():
                break
            llm.eval(prompt[start:start + llm.n_batch])
            if progress is not None:
                progress(min(start + llm.n_batch, len(prompt)) - common, len(prompt) - common)
        return len(prompt) - common

    def _drafts(self, params: SamplingParams) -> bool:
        """Whether this reply drafts: unless it is off, or the model's memory cannot forget the
        end of a rejected draft. A recurrent or hybrid model's state (Mamba, RWKV, Jamba) holds
        no positions to remove, so it decodes one token at a time. Gemma 3's sliding-window
        cache can: the engine keeps it whole (swa_full), and a draft only ever adds positions
        after the last accepted one, which are removed again."""
        return params.draft is Drafting.LOOKUP and not (self._llm._is_recurrent or self._llm._is_hybrid)

    def _sampler(self, params: SamplingParams, seed: int) -> LlamaSampler:
        sampler = LlamaSampler()
        if params.logit_bias:
            sampler.add_logit_bias(self._n_vocab, params.logit_bias)
        sampler.add_penalties(
            n_vocab=self._n_vocab,
            penalty_last_n=params.repeat_last_n,
            penalty_repeat=params.repeat_penalty,
            penalty_freq=params.frequency_penalty,
            penalty_present=params.presence_penalty,
        )
        if params.temperature == 0:
            sampler.add_greedy()
            return sampler
        if params.top_k > 0:
            sampler.add_top_k(params.top_k)
        sampler.add_top_p(params.top_p, 1)
        sampler.add_min_p(params.min_p, 1)
        sampler.add_temp(params.temperature)
        sampler.add_dist(seed)
        return sampler

    def _piece(self, token: int) -> bytes:
        """The bytes of one token, however long (llama_token_to_piece says when to grow)."""
        buffer = self._piece_buffer
        text_token = token in self._eog_text_tokens  # retyped control by llama.cpp: ask for its text
        n = llama_c.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, text_token)
        if n < 0:
            self._piece_buffer = buffer = ctypes.create_string_buffer(-n)
            n = llama_c.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, text_token)
        return buffer.raw[:n]

    @property
    def cached_tokens(self) -> list[int]:
        """The token sequence of the last prompt and reply (what the next prompt should extend)."""
        return [t for segment in self._segments for t in segment.tokens]


@dataclass(frozen=True)
class _Segment:
    """A stretch of the last token sequence and the text it stands for.

    A prompt segment is reused whole or not at all (a tokenizer may add a space prefix, so its
    tokens' pieces need not spell its text). A reply segment keeps each token's bytes, so
    when a template trims the reply (Gemma's `| trim`) the tokens up to the cut still match.
    """

    data: bytes
    tokens: list[int]
    pieces: list[bytes] | None = None
    # The reply was shown without its first token's leading space (SentencePiece's "▁"), so a
    # template may render it back with or without that space.
    shown_without_space: bool = False

    def match(self, text: bytes, position: int) -> "_Segment":
        """This whole segment if `text` continues with it at `position`, else its longest match."""
        if self.data and text.startswith(self.data, position):
            return self
        best = self.matching_prefix(text, position)
        if self.shown_without_space:
            unspaced = _Segment(self.data[1:], self.tokens, [self.pieces[0][1:]] + self.pieces[1:])
            if unspaced.data and text.startswith(unspaced.data, position):
                return unspaced
            alternative = unspaced.matching_prefix(text, position)
            if len(alternative.tokens) > len(best.tokens):
                best = alternative
        return best

    def matching_prefix(self, text: bytes, position: int) -> "_Segment":
        """The longest run of leading tokens whose bytes appear in `text` at `position`."""
        if self.pieces is None:
            return _Segment(b"", [])
        end = position
        count = 0
        for piece in self.pieces:
            if not piece or not text.startswith(piece, end):
                break
            end += len(piece)
            count += 1
        while count and end < len(text) and (text[end] & 0xC0) == 0x80:  # never split a character
            count -= 1
            end -= len(self.pieces[count])
        return _Segment(text[position:end], self.tokens[:count], self.pieces[:count])


def _common_prefix(cached, prompt: list[int]) -> int:
    common = 0
    for a, b in zip(cached, prompt):
        if a != b:
            break
        common += 1
    return common


class _LogWriter(io.TextIOBase):
    """A file-like object that sends llama-cpp-python's print() output to a logger."""

    def __init__(self, logger: logging.Logger):
        self._logger = logger

    def write(self, text: str) -> int:
        if text.strip():
            self._logger.debug(text.rstrip())
        return len(text)
