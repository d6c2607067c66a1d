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

Images (#30) are part of the prompt's token list (vision.py says how), evaluated by libmtmd
at their place, so everything above holds for an image conversation too.

Its other jobs live apart: prefix reuse (engine/kv/prefix_reuse.py: the next prompt reuses
the tokens of the last one and its reply where the text still matches; window_checkpoints.py
where a sliding window's cache no longer holds them) and saved states (state_keeper.py).
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from ...images.image import Image, ImageError
from ..backend import Backend, LoadCancelled, PromptProgress, ReplyEvent, paced
from ..context import ContextFullError, Fitted, fit_conversation
from ..gguf.modelfile import ModelFileError, ModelInfo
from ..gguf.reading import inspect_model
from ..image_prompt import check_images_written, pieces, with_placeholders
from ..kv.cache import StateCache
from ..kv.prefix_reuse import PrefixReuse, common_prefix
from ..kv.segments import Segment
from ..load_checks import check_load_options, flash_attention_for, memlock_limit, mlock_refused_note
from ..lookup import DraftStats
from ..memory_plan import WHOLE_WINDOW_CACHE, gpu_layers_for
from ..options import context_for
from ..sampling import Drafting, SamplingParams
from ..stops import StopStringMatcher
from ..templates.chat_template import ChatTemplate, template_for
from ..tools.types import PLAIN, ToolUse
from ..types import DeviceInfo, LoadOptions, LocalModel, ModelDescription, ReplyStats, StopReason
from . import kv_seq, load_params
from . import log_shim as llama_log
from .devices import cpu_threads, free_vram, offload_support, supports_gpu_offload
from .draft_verifier import DraftVerifier
from .logprob_reader import NO_LOGPROBS, LogprobReader
from .reply_sampler import ReplySampler
from .state_keeper import StateKeeper
from .tool_reply import ToolReply
from .vision import Vision, evaluation_runs, is_image_position
from .window_checkpoints import WindowCheckpoints

log = logging.getLogger(__name__)


class Engine(Backend):
    """One model loaded by llama.cpp. Not thread-safe: one thread (the worker) drives it."""

    def __init__(self, path: str | Path, options: LoadOptions = LoadOptions(),
                 progress: Callable[[float], None] | None = None, cancel: threading.Event | None = None,
                 states: StateCache | None = None):
        self.info: ModelInfo = inspect_model(path)
        check_load_options(options)  # before a byte of the weights is read
        self.options = options
        self.load_notes: tuple[str, ...] = ()  # what the load could not do as asked (ModelDescription)
        self.template: ChatTemplate = template_for(self.info, options.template_override)
        llama_log.install()
        self._llm = self._load(progress, cancel)
        self._vision: Vision | None = None
        self._images: dict[str, Image] = {}  # the images of the prompt being made, by digest
        if options.mmproj:
            try:
                self._vision = Vision(self._llm, Path(options.mmproj), self.device.gpu_layers > 0,
                                      self.device.cpu_threads)
            except BaseException:
                self._llm.close()
                raise
        self._vocab = self._llm._model.vocab
        self._n_vocab = llama_c.llama_vocab_n_tokens(self._vocab)
        self.n_ctx = self._llm.n_ctx()
        self.stop_token_ids, self._eog_text_tokens = self._end_of_generation_ids()
        self._add_bos = bool(llama_c.llama_vocab_get_add_bos(self._vocab))
        self._bos_id = llama_c.llama_vocab_bos(self._vocab)
        # SentencePiece vocabs with a space prefix tokenize "\n" as ["▁", "\n"]; see tokenize().
        self._newline_tokens = self._llm.tokenize(b"\n", add_bos=False, special=False)
        self._prefix = PrefixReuse(self.tokenize, self._is_special)
        self._last_fit: tuple[int, list[dict]] = (0, [])  # its budget, and the turns it left out
        self._piece_buffer = ctypes.create_string_buffer(64)
        self._pieces: dict[tuple[int, bool], bytes] = {}  # (token, as text) -> its bytes: _piece
        self.last_draft_stats: DraftStats | None = None  # the last reply's drafting (None: it did not draft)
        self._checkpoints = WindowCheckpoints(self._llm)
        self._keeper = StateKeeper(self._llm, states, self._prefix, self.info.path, self.device.gpu_layers,
                                   self._evaluate_prompt, Path(options.mmproj) if options.mmproj else None)

    # --- loading -----------------------------------------------------------------------------

    def _load(self, progress, cancel) -> Llama:
        info, options = self.info, self.options
        n_ctx = context_for(options.n_ctx, info.context_length)
        gpu = supports_gpu_offload()
        n_gpu_layers = gpu_layers_for(info.path, options, offloads=gpu, free_vram=free_vram, projector=options.mmproj)
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

        # verbose=True: verbose=False os.dup()s stdout, which a windowed app lacks; prints go to the log.
        chatter = llama_log.LogWriter(logging.getLogger("llama_cpp.python"))
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
                    swa_full=WHOLE_WINDOW_CACHE,
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
                                load_notes=self.load_notes,
                                projector=self._vision.path if self._vision is not None else None)

    def close(self) -> None:
        self.keep_state()
        if self._vision is not None:
            self._vision.close()
        self._llm.close()

    def set_template_override(self, source: str | None) -> str:
        """Use another chat template from the next reply on (None: the model's own)."""
        self.template = template_for(self.info, source)
        return self.template.name

    # --- prompts -------------------------------------------------------------------------------

    def render(self, messages: list[dict]) -> str:
        return self.template.render(messages, add_generation_prompt=True)

    def _render_finished(self, messages: list[dict]) -> str:
        """The messages as a finished conversation, its last turn closed (a saved state's text)."""
        return self.template.render(messages, add_generation_prompt=False)

    def tokenize(self, text: str, at_start: bool = True, after_text: bool = False) -> list[int]:
        """Tokenize prompt text as `_tokenize_text` does, each placeholder of an image of the
        prompt being made (image_prompt.py) becoming the image's entries (vision.py)."""
        if not self._images:
            return self._tokenize_text(text, at_start, after_text)
        tokens: list[int] = []
        for piece in pieces(text, self._images):
            if isinstance(piece, Image):
                if at_start and not tokens and self._add_bos and self._bos_id >= 0:
                    tokens.append(self._bos_id)  # a prompt that begins with an image still begins with BOS
                tokens += self._vision.entries(piece)
            else:
                follows_text = after_text if not tokens else not (is_image_position(tokens[-1])
                                                                  or self._is_special(tokens[-1]))
                tokens += self._tokenize_text(piece, at_start and not tokens, follows_text)
        return tokens

    def _tokenize_text(self, text: str, at_start: bool = True, after_text: bool = False) -> list[int]:
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
        return self._prefix.tokens_for(self.render(messages))[0]

    def _is_special(self, token: int) -> bool:
        """Whether llama.cpp's tokenizer treats the token as special (matched by its text)."""
        attr = llama_c.llama_vocab_get_attr(self._vocab, token)
        return bool(attr & (llama_c.LLAMA_TOKEN_ATTR_CONTROL | llama_c.LLAMA_TOKEN_ATTR_USER_DEFINED
                            | llama_c.LLAMA_TOKEN_ATTR_UNKNOWN))

    def fit(self, messages: list[dict], max_tokens: int) -> Fitted:
        return self._fit(messages, max_tokens, self.render)[0]

    def _fit(self, messages: list[dict], max_tokens: int, render: Callable[[list[dict]], str]
             ) -> tuple[Fitted, list[Segment]]:
        """Fit the conversation as `render` writes it, keeping the token segments of the prompt
        that fitted, so it need not be tokenized again, and which turns were dropped, to drop
        the same next time."""
        measured: dict[int, list[Segment]] = {}  # by the candidate's message count

        def tokenize(candidate: list[dict]) -> list[int]:
            text = render(candidate)
            check_images_written(candidate, text, self._images, self.template.name)
            tokens, measured[len(candidate)] = self._prefix.tokens_for(text)
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
        tools: ToolUse = PLAIN, logprobs: int | None = None,
        text_interval_s: float = 0.0,
    ) -> Iterator[ReplyEvent]:
        """Yield text chunks of the reply, then one ReplyStats. Never raises mid-reply.

        Template and context errors raise before the first yield, so a caller sees them as
        a failed request rather than a half-finished reply. `prompt_progress(done, total)` is
        called after each batch of prompt tokens evaluated when there is more than one batch
        to read: a long prompt on a CPU takes seconds before the first token, and a user
        deserves to see why (one batch goes by too fast to show).

        `conversation_id`: the stored conversation this reply belongs to (None: a served job or
        a one-off chat). Switching to another one saves the KV state of the one left; reopening
        one restores its saved state, so only its new tokens are evaluated.

        `tools`: the prompt carries them as the template lays them out (tool_reply.py), calls
        and structured output are held to their schemas by a grammar, and calls are parsed out
        of the text as it streams. The tools are part of the prompt's text, so prefix reuse,
        drafting and saved states work as for any prompt.

        `logprobs`: each token's log-probability with that many alternatives, read from the
        logits row it was sampled from (logprob_reader.py); None reads nothing.
        """
        self._keeper.switch_to(conversation_id)
        messages = self._with_images(messages)
        cancel = cancel or threading.Event()
        with_tools = None if tools.is_plain else ToolReply(self.template, tools, self.info.special_tokens)
        max_tokens = min(params.max_tokens, self.n_ctx - 1)
        try:
            fitted, segments = self._fit(messages, max_tokens, with_tools.prompt if with_tools else self.render)
        except ContextFullError as exc:
            if not tools.tools:
                raise
            raise ContextFullError(f"{exc} The prompt carries the {len(tools.tools)} tools offered: offering "
                                   "fewer (the Tools button) leaves more room.") from None
        prompt = fitted.prompt_tokens
        if prompt and is_image_position(prompt[-1]):  # nothing after it to read the reply's first token from
            raise ImageError(f"The chat template ({self.template.name}) ends the prompt with an image; add text after it.")
        stats = ReplyStats(
            prompt_tokens=len(prompt), dropped_messages=fitted.dropped_messages, seed=params.resolved_seed()
        )
        # Made now, not at the first token: a grammar llama.cpp refuses fails the request.
        sampler = ReplySampler(self._llm, params, stats.seed, with_tools.grammar if with_tools else None,
                               self.stop_token_ids)
        shown_tokens = with_tools.preserved if with_tools else frozenset()
        reader = NO_LOGPROBS if logprobs is None else LogprobReader(
            self._llm._ctx, self._n_vocab, min(logprobs, self._n_vocab), lambda token: self._piece(token, True))
        events = self._keeper.replying(
            fitted.messages, self._generate(prompt, segments, params, stats, cancel, max_tokens, prompt_progress,
                                            sampler, shown_tokens, reader),
            with_tools.finished if with_tools else self._render_finished)
        return paced(with_tools.parsed(events) if with_tools else events, text_interval_s)

    def _with_images(self, messages: list[dict]) -> list[dict]:
        """The messages with their images as placeholders, the images kept for the tokenizer;
        ImageError where the model has no projector to read them with."""
        rendered, images = with_placeholders(messages)
        if images and self._vision is None:
            raise ImageError(f"{self.info.name} cannot read images: no projector (mmproj) was loaded with it. "
                             "Load a vision model with its projector, or send the message without images.")
        if self._vision is not None:
            self._vision.begin(images.values())
        self._images = images
        return rendered

    # --- saved KV state (state_keeper.py) ------------------------------------------------------

    def prepare(self, conversation_id: int | None) -> None:
        self._keeper.prepare(conversation_id)

    def keep_state(self) -> None:
        """Save the KV state of the conversation the cache holds, as its next prompt will begin
        (StateKeeper.keep_state): closing the engine does, and a reply elsewhere."""
        self._keeper.keep_state()

    def forget_state(self, conversation_id: int) -> None:
        self._keeper.forget_state(conversation_id)

    # --- decoding ------------------------------------------------------------------------------

    def _generate(self, prompt, segments, params, stats, cancel, max_tokens, prompt_progress, sampler: ReplySampler,
                  shown_tokens: frozenset[int], logprobs: LogprobReader = NO_LOGPROBS):
        """The decode loop. `shown_tokens`: control tokens whose text the reply shows (a call's
        markers, for the parser to read; tool_reply.py). `logprobs` notes each kept token's
        log-probability before the next decode, and its notes go out just before the text
        they complete (those of text a stop string cut off never do)."""
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
            verifier = DraftVerifier(self._llm, prompt if self._drafts(params) else None)
            index = -1  # the logits the next token is sampled from: the batch row before it
            stats.stop_reason = StopReason.LENGTH
            while len(reply_tokens) < max_tokens:
                if cancel.is_set():
                    stats.stop_reason = StopReason.CANCELLED
                    break
                if verifier.evaluated >= self.n_ctx:
                    break  # the window is full: stop with "length"
                token = sampler.sample(index)
                last_token_at = time.perf_counter()
                if first_token_at is None:
                    first_token_at = last_token_at
                    stats.ttft_s = first_token_at - started
                if token in self.stop_token_ids:
                    stats.stop_reason = StopReason.END_OF_TURN
                    break
                reply_tokens.append(token)
                logprobs.note(index, token)
                piece = self._piece(token, token in shown_tokens)
                reply_pieces.append(piece)
                shown = piece
                if len(reply_tokens) == 1 and strip_space and piece.startswith(b" "):
                    shown = piece[1:]  # SentencePiece's word-start space, as HF's decode drops it
                    stripped_space = True
                text, stopped = stops.feed(decoder.decode(shown))
                if text:
                    yield from logprobs.release()
                    yield text
                if stopped:
                    stats.stop_reason = StopReason.STOP_STRING
                    break
                if len(reply_tokens) == max_tokens:
                    break  # no token follows it to read its logits: the next prompt evaluates it
                if len(reply_tokens) == 1:  # the cache holds the prompt: keep its window
                    self._checkpoints.take(prompt)
                index = verifier.advance(token, max_tokens - len(reply_tokens))
            tail = stops.flush(decoder.decode(b"", final=True)) if stats.stop_reason is not StopReason.STOP_STRING else ""
            if stats.stop_reason is not StopReason.STOP_STRING:
                yield from logprobs.release()
            if tail:
                yield tail
        except Exception as exc:  # llama.cpp decode failure (e.g. out of memory)
            log.exception("generation failed")
            stats.stop_reason = StopReason.ERROR
            stats.error = f"The model failed while generating: {exc}"
        finally:
            sampler.close()
            if verifier is not None:
                verifier.finish()
                self.last_draft_stats = verifier.draft_stats
                if self.last_draft_stats is not None:
                    log.debug("drafting: %s", self.last_draft_stats)
            stats.completion_tokens = len(reply_tokens)
            if first_token_at is not None and last_token_at is not None and len(reply_tokens) > 1:
                stats.tokens_per_s = (len(reply_tokens) - 1) / max(last_token_at - first_token_at, 1e-9)
            reply = Segment(b"".join(reply_pieces), reply_tokens, reply_pieces, stripped_space)
            self._prefix.segments = segments + [reply]
        yield stats

    def _evaluate_prompt(self, prompt: list[int], cancel: threading.Event, progress=None) -> int:
        """Decode the prompt tokens not already in the KV cache and return how many there were.

        Cancelling stops between batches; the generation loop then sees the flag at once.
        """
        llm = self._llm
        common = self._keeper.restored(prompt, common_prefix(llm.input_ids[: llm.n_tokens], prompt))
        common = min(common, len(prompt) - 1)  # re-decode at least one token for fresh logits
        while 0 < common < len(prompt) and is_image_position(prompt[common]) and prompt[common - 1] == prompt[common]:
            common -= 1  # an image is evaluated whole
        common = self._checkpoints.reusable(prompt, common)  # a sliding window's cache may not hold them all
        if common <= 0 or not llm._ctx.kv_cache_seq_rm(-1, common, -1):
            llm.reset()
            common = 0
        llm.n_tokens = common
        if len(prompt) - common <= llm.n_batch:
            progress = None  # one batch goes by too fast to show
        for start, end in evaluation_runs(prompt, common, llm.n_batch):
            if cancel.is_set():
                break
            if is_image_position(prompt[start]):
                llm._ctx.kv_cache_seq_rm(-1, start, -1)  # as Llama.eval does before a batch
                llm.n_tokens = self._vision.evaluate(prompt[start], start)
                llm.input_ids[start:end] = prompt[start:end]
            else:
                llm.eval(prompt[start:end])
            if progress is not None:
                progress(end - common, len(prompt) - common)
        return len(prompt) - common

    def _drafts(self, params: SamplingParams) -> bool:
        """Whether this reply drafts: unless it is off, or the model's memory cannot forget the
        end of a rejected draft. A recurrent or hybrid model's state (Mamba, RWKV, Jamba) holds
        no positions to remove, so it decodes one token at a time. Gemma 3's window-sized cache
        can: a draft only adds positions after the last accepted one, and llama.cpp reuses only
        cells the window had left before the batch (it holds window + ubatch positions)."""
        return params.draft is Drafting.LOOKUP and not (self._llm._is_recurrent or self._llm._is_hybrid)

    def _piece(self, token: int, shown: bool = False) -> bytes:
        """The bytes of one token, however long (llama_token_to_piece says when to grow).
        `shown`: a control token whose text the reply shows. Kept once asked: a reply asks for
        the same few thousand tokens again and again, and a dict is cheaper than the call."""
        text_token = shown or token in self._eog_text_tokens  # retyped control by llama.cpp: ask for its text
        piece = self._pieces.get((token, text_token))
        if piece is None:
            buffer = self._piece_buffer
            n = llama_c.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, text_token)
            if n < 0:
                self._piece_buffer = buffer = ctypes.create_string_buffer(-n)
                n = llama_c.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, text_token)
            piece = self._pieces[token, text_token] = buffer.raw[:n]
        return piece

    @property
    def cached_tokens(self) -> list[int]:
        """The token sequence of the last prompt and reply (what the next prompt should extend)."""
        return self._prefix.tokens
