"""The scripted models' families (scripted_models.py builds them): each one's tokenizer, chat
template, generation prompt and the call its reply spells.

Every reply is the same call, `get_weather` with `{"city": "Paris"}`, in the family's own
syntax. Where a family writes its call markers with control tokens (`[TOOL_CALLS]`,
`<|python_tag|>`, Granite's `<|tool_call|>`), llama.cpp does not print their text: a plain
reply shows the call without them (`ScriptedFamily.plain`), and only a reply that may call a
tool shows them, for the parser to read (app/engine/llama/tool_reply.py `_marker_tokens`). Those
markers are named in `hidden`, and the builder checks that they, and only they, vanish from the
printed reply.

The families and what stands for what:
- qwen3: the suite's Qwen3 tokenizer (tiny_models.py: the real Qwen2 vocab with Qwen3's added
  tokens; `<tool_call>` is user-defined there, as in Qwen's own files) and Qwen3's template.
  Hermes/Qwen form: `<tool_call>\\n{json}\\n</tool_call>`, then `<|im_end|>`.
- llama-3.1: the suite's Llama 3.1 tokenizer and template; Meta's bare JSON form
  `{"name": ..., "parameters": {...}}`, then `<|eot_id|>`.
- llama-3.1-python-tag: the same tokenizer and template, the form Meta's models also write:
  `<|python_tag|>` (a control token) before the JSON, then `<|eom_id|>` (end of message, also
  end-of-generation in llama.cpp).
- phi-4-mini: the real Phi-3 SentencePiece vocab (its `<|assistant|>`, `<|end|>`... control
  tokens) has no tool tokens; its first four placeholders become Phi-4-mini's `<|tool|>` and
  `<|/tool|>` (control) and `<|tool_call|>` and `<|/tool_call|>` (user-defined, so their text is
  part of every reply), with Phi-4-mini's template. Form: `<|tool_call|>[{json}]<|/tool_call|>`,
  then `<|end|>`. A SentencePiece vocab also exercises the word-start "▁" in replies.
- mistral-nemo: Mistral's Tekken vocab is not available. The Llama 3 BPE vocab stands in (a
  byte-level BPE, as Tekken is), with Mistral Nemo's control tokens in place of reserved ones
  (`<s>`, `</s>`, `[INST]`, `[/INST]`, `[TOOL_CALLS]`, `[AVAILABLE_TOOLS]`,
  `[/AVAILABLE_TOOLS]`, `[TOOL_RESULTS]`, `[/TOOL_RESULTS]`, all control, as in Mistral's
  files), and Mistral Nemo's own template (llama.cpp's models/templates copy, in
  tests/data/tool_templates/). Form: `[TOOL_CALLS][{json with a 9-character "id"}]`, then `</s>`.
- granite: the Llama 3 BPE vocab again, with Granite 3.3's `<|start_of_role|>`,
  `<|end_of_role|>` and `<|tool_call|>` (control, as in IBM's files) and its
  `<|end_of_text|>` as BOS and EOS, and Granite 3.3's template. Form: `<|tool_call|>[{json}]`,
  then `<|end_of_text|>`.
- Mistral's `[TOOL_CALLS]` on the Llama 2 SentencePiece vocab (Mistral 7B v0.3) is not here:
  that vocab lacks the token, and Nemo's row covers the same marker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from support.model_files import tiny_models as tiny

TOOL_TEMPLATES = tiny.TESTS / "data" / "tool_templates"

# The call every model makes, in each family's own syntax.
CALL_NAME = "get_weather"
CALL_ARGUMENTS = {"city": "Paris"}
MISTRAL_CALL_ID = "abcdef123"  # Mistral's templates accept only 9 alphanumerics
_CALL_JSON = json.dumps({"name": CALL_NAME, "arguments": CALL_ARGUMENTS})
_LLAMA_JSON = json.dumps({"name": CALL_NAME, "parameters": CALL_ARGUMENTS})


@dataclass(frozen=True)
class ScriptedFamily:
    tokenizer: tiny.Family  # the vocab file and its renames, BOS/EOS
    template: str  # whose chat template: a family of tests/data/families.json, or a file in TOOL_TEMPLATES
    prompt_tail: str  # the end of every prompt: the generation prompt, from the last fixed token
    text: str  # the reply, spelled exactly, control-token markers shown
    end: str  # the token that ends the turn after it
    hidden: tuple[str, ...] = ()  # the control tokens in `text`, whose text a plain reply does not show
    call_id: str = ""  # the id the call carries, if the family writes one

    @property
    def plain(self) -> str:
        """The reply as a reply that cannot call a tool shows it: without the control tokens."""
        text = self.text
        for marker in self.hidden:
            text = text.replace(marker, "")
        return text

    def chat_template(self, entries: dict[str, dict]) -> str:
        if self.template.endswith(".jinja"):
            return (TOOL_TEMPLATES / self.template).read_text(encoding="utf-8")
        return entries[self.template]["chat_template"]


def _renamed(base: tiny.Family, name: str, tokenizer: str, bos: str, eos: str, add_bos: bool,
             first: int, texts: list[str], more: dict[int, tuple[str, int]] | None = None) -> tiny.Family:
    """`base`'s tokenizer with `texts` (control tokens) in the slots from `first` on."""
    renames = dict(base.renames) | {first + i: (text, tiny.CONTROL) for i, text in enumerate(texts)} | (more or {})
    return tiny.Family(name, base.arch, base.vocab, tokenizer, bos, eos, add_bos, renames)


_TINY = {f.name: f for f in tiny.TINY_FAMILIES}
_LLAMA31 = _TINY["llama-3.1"]
_LLAMA_RESERVED = 128011  # Llama 3.1's first `<|reserved_special_token_N|>` slot
_PHI3_TOOL_TOKENS = {32002: ("<|tool|>", tiny.CONTROL), 32003: ("<|/tool|>", tiny.CONTROL),
                     32004: ("<|tool_call|>", tiny.USER_DEFINED), 32005: ("<|/tool_call|>", tiny.USER_DEFINED)}
_MISTRAL_NEMO = _renamed(
    _LLAMA31, "mistral-nemo", "Llama 3 BPE standing in for Tekken, with Mistral Nemo's control tokens",
    "<s>", "</s>", True, _LLAMA_RESERVED,
    ["[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
     "[/TOOL_RESULTS]"],
    {128000: ("<s>", tiny.CONTROL), 128001: ("</s>", tiny.CONTROL)})
_GRANITE = _renamed(
    _LLAMA31, "granite", "Llama 3 BPE standing in for Granite's, with Granite 3.3's control tokens",
    "<|end_of_text|>", "<|end_of_text|>", False, _LLAMA_RESERVED,
    ["<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"])

SCRIPTED_FAMILIES: dict[str, ScriptedFamily] = {
    "qwen3": ScriptedFamily(_TINY["qwen3"], "qwen3", "<|im_start|>assistant\n",
                            f"<tool_call>\n{_CALL_JSON}\n</tool_call>", "<|im_end|>"),
    "llama-3.1": ScriptedFamily(
        _LLAMA31, "llama-3.1", "<|start_header_id|>assistant<|end_header_id|>\n\n", _LLAMA_JSON, "<|eot_id|>"),
    "llama-3.1-python-tag": ScriptedFamily(
        _LLAMA31, "llama-3.1", "<|start_header_id|>assistant<|end_header_id|>\n\n", f"<|python_tag|>{_LLAMA_JSON}",
        "<|eom_id|>", hidden=("<|python_tag|>",)),
    "phi-4-mini": ScriptedFamily(
        tiny.Family("phi-4-mini", "llama", "ggml-vocab-phi-3.gguf", "Phi-3 SentencePiece with Phi-4-mini's tool tokens",
                    "<s>", "<|endoftext|>", True, _PHI3_TOOL_TOKENS),
        "phi-4-mini", "<|end|><|assistant|>", f"<|tool_call|>[{_CALL_JSON}]<|/tool_call|>", "<|end|>"),
    "mistral-nemo": ScriptedFamily(
        _MISTRAL_NEMO, "mistralai-Mistral-Nemo-Instruct-2407.jinja", "[/INST]",
        "[TOOL_CALLS][" + json.dumps({"name": CALL_NAME, "arguments": CALL_ARGUMENTS, "id": MISTRAL_CALL_ID}) + "]",
        "</s>", hidden=("[TOOL_CALLS]",), call_id=MISTRAL_CALL_ID),
    "granite": ScriptedFamily(
        _GRANITE, "ibm-granite-granite-3.3-2B-Instruct.jinja", "<|start_of_role|>assistant<|end_of_role|>",
        f"<|tool_call|>[{_CALL_JSON}]", "<|end_of_text|>", hidden=("<|tool_call|>",)),
}
