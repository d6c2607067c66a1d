"""A stored conversation answered by the real Engine the way ChatSession answers it, to measure
what each reply evaluates when the branch changes (tests/engine/test_branch_prefix_reuse.py and
bench/branch_prefix.py).

Each reply is stored by ChatSession's own recipe (app/conversation/exchange.py): its history
read from the branch shown (above the replaced reply for Regenerate), stored as 'streaming'
and finished with the engine's ReplyStats; Edit adds a version of the user message, Show a
version moves the branch shown. No Qt: the engine is driven on this thread.

What a reply should evaluate is worked out apart from the engine's own bookkeeping: what the
KV cache holds (the previous prompt, rendered with the model's template, and its reply) and the
new prompt, rendered, are each tokenized afresh, and the tokens of the new one after their
common prefix are the tokens after the point where the two branches differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.conversation.exchange import begin_reply
from app.engine.llama.generator import Engine
from app.engine.sampling import SamplingParams
from app.store import ConversationStore
from support.reply_events import collect

SYSTEM_PROMPT = ""  # as ChatSession sends by default
PARAMS = SamplingParams(seed=13, max_tokens=40)  # the default sampling, repeatable; the bench's replies
QUESTIONS = [
    "What is a river delta?", "Why is the sea salty?", "What is an estuary?", "How do tides work?",
    "What is a lagoon?", "Why do rivers meander?", "What is a fjord?", "How are beaches made?",
]


@dataclass(frozen=True)
class Measured:
    """One reply: its prompt, the prompt tokens the engine evaluated (not found in its KV cache),
    and how many of the prompt's tokens come after the branch in the cache and this one differ."""

    step: str
    prompt_tokens: int
    evaluated_prompt_tokens: int
    after_divergence: int
    ttft_s: float | None  # None when not a token was sampled

    def to_dict(self) -> dict:
        return {"step": self.step, "prompt_tokens": self.prompt_tokens,
                "evaluated_prompt_tokens": self.evaluated_prompt_tokens,
                "after_divergence": self.after_divergence, "ttft_s": self.ttft_s}


class BranchWalk:
    """Send, Regenerate, Edit and Show a version on one stored conversation, answered by `engine`
    with `params`."""

    def __init__(self, engine: Engine, store: ConversationStore, params: SamplingParams = PARAMS):
        self.engine, self.store, self.params = engine, store, params
        self.conversation_id = store.create_conversation(model=engine.info.path.name)
        self._in_cache = ""  # the text the KV cache holds: the last prompt, rendered, and its reply

    def send(self, text: str, step: str = "send") -> Measured:
        self.store.add_message(self.conversation_id, "user", text)
        return self._reply(step)

    def regenerate(self, step: str = "regenerate") -> Measured:
        return self._reply(step, replacing=self.store.leaf_message(self.conversation_id).id)

    def edit(self, message_id: int, text: str, step: str = "edit") -> Measured:
        self.store.add_version(message_id, text)
        return self._reply(step)

    def show_version(self, message_id: int) -> None:
        self.store.show_version(message_id)

    def _reply(self, step: str, replacing: int | None = None) -> Measured:
        stored = begin_reply(self.store, self.conversation_id, SYSTEM_PROMPT, self.engine.info.path.name, self.params,
                             self.store.message(replacing) if replacing is not None else None)
        messages = stored.messages
        after = self.after_divergence(messages)
        pieces, stats = collect(self.engine.stream(messages, self.params))
        text = "".join(pieces)
        stored.finish(text, stats)
        if stats.dropped_messages:
            raise AssertionError(f"{step}: the context window is too small for this walk")
        self._in_cache = self.engine.render(messages) + text
        return Measured(step, stats.prompt_tokens, stats.evaluated_prompt_tokens, after, stats.ttft_s)

    def after_divergence(self, messages: list[dict]) -> int:
        """Tokens of the prompt for `messages` after its common prefix with the branch the KV
        cache holds, both rendered and tokenized afresh."""
        new = self._tokens(self.engine.render(messages))
        cached = self._tokens(self._in_cache) if self._in_cache else []
        common = 0
        for a, b in zip(cached, new):
            if a != b:
                break
            common += 1
        return len(new) - common

    def _tokens(self, text: str) -> list[int]:
        return self.engine.tokenize(text, at_start=True)


@dataclass(frozen=True)
class BranchPrefix:
    """The walk's measurements: the exchanges that built the conversation, then (a) the last
    reply regenerated, (b) a reply to an edit of the user message before the last, (c) a reply
    on the original branch, shown again."""

    conversation_id: int
    exchanges: list[Measured]
    regenerated: Measured
    edited: Measured
    switched_back: Measured


def walk_branches(engine: Engine, store: ConversationStore, params: SamplingParams = PARAMS) -> BranchPrefix:
    """Build a conversation of len(QUESTIONS) exchanges, then regenerate, edit and switch back,
    each reply sampled with `params` (the test suite's are shorter than the bench's: what is
    measured is the prompt, and the replies only need to be in it)."""
    walk = BranchWalk(engine, store, params)
    exchanges = [walk.send(question, f"exchange {n + 1}") for n, question in enumerate(QUESTIONS)]
    regenerated = walk.regenerate("(a) regenerate the last reply")
    before_last = [m for m in store.messages(walk.conversation_id) if m.role == "user"][-2]
    edited = walk.edit(before_last.id, "What is a fjord, and where are the deepest ones?",
                       "(b) edit the user message before the last, reply")
    walk.show_version(before_last.id)
    switched_back = walk.send("Thank you. One more: what is a sandbar?",
                              "(c) show the original branch again, send")
    return BranchPrefix(walk.conversation_id, exchanges, regenerated, edited, switched_back)
