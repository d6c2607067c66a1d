"""The tools a reply may call, from the servers the user chose: each server's tools under the
names the model sees, and back from a name the model wrote to the server and tool it means.

The names the model sees are function names (OpenAI's rule, ^[a-zA-Z0-9_-]{1,64}$, which every
chat template and engine/tools holds them to); an MCP tool's name may also hold '.' and be 128
characters long, and two servers may offer tools of one name. The rule, applied in the order
the servers and their tools are listed:

  1. a tool's name, with each character outside [a-zA-Z0-9_-] made '_' and cut to 64, is its
     model name where no other chosen tool comes to the same;
  2. tools that do come to the same name are each named SERVER_TOOL the same way ("files_read",
     "notes_read"),
  3. and where even that is taken, SERVER_TOOL_2, _3… (cut so the whole stays within 64).

So a tool keeps its own name in the prompt unless a clash forces the server into it, and a
catalog is the same whenever it is built from the same statuses.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable

from ..common.text import printable
from ..engine.tools.types import Tool
from .schemas import offered_tool
from .types import ListedTool, ServerStatus

MAX_NAME = 64


class UnknownTool(ValueError):
    """A tool asked for by name (the command line's --allow-tool, --tool-choice) that the chosen
    servers do not offer, or offer more than once; the message says which and what to write."""


class ToolCatalog:
    """The tools of `statuses` (only the servers named in `servers`, when given) for one reply."""

    def __init__(self, statuses: Iterable[ServerStatus], servers: Collection[str] | None = None):
        listed = [tool for status in statuses if servers is None or status.name in servers for tool in status.tools]
        names = _model_names(listed)
        self._listed: tuple[ListedTool, ...] = tuple(listed)
        self._by_model_name: dict[str, ListedTool] = {}
        self._model_name: dict[tuple[str, str], str] = {}
        tools: list[Tool] = []
        notes: list[str] = []
        for tool, name in zip(listed, names):
            offered, note = offered_tool(name, tool.description, tool.input_schema)
            tools.append(offered)
            if note:
                notes.append(f"{printable(tool.server)}/{tool.name}: {note}")
            self._by_model_name[name] = tool
            self._model_name[(tool.server, tool.name)] = name
        self._tools = tuple(tools)
        self.notes: tuple[str, ...] = tuple(notes)  # tools whose schema was loosened, and how

    @classmethod
    def build(cls, statuses: Iterable[ServerStatus], servers: Collection[str] | None = None) -> ToolCatalog:
        return cls(statuses, servers)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The functions for ToolUse, in the servers' order, under their model names."""
        return self._tools

    @property
    def listed(self) -> tuple[ListedTool, ...]:
        return self._listed

    def __len__(self) -> int:
        return len(self._tools)

    def lookup(self, model_name: str) -> ListedTool | None:
        """The server's tool behind a name the model wrote (None: no tool of the catalog)."""
        return self._by_model_name.get(model_name)

    def model_name(self, tool: ListedTool) -> str:
        """The name the model sees for one of the catalog's tools (KeyError otherwise)."""
        return self._model_name[(tool.server, tool.name)]

    def find(self, spec: str) -> ListedTool:
        """A tool as the command line names it: its own name, or SERVER/TOOL where two servers
        offer that name (a model name is accepted too). UnknownTool says what is wrong."""
        if "/" in spec:
            server, _, name = spec.rpartition("/")  # tool names hold no '/'; server names may
            found = [tool for tool in self._listed if tool.server == server and tool.name == name]
            if found:
                return found[0]
            if not any(tool.server == server for tool in self._listed):
                raise UnknownTool(f"{printable(spec)}: no server named {printable(server)} offers tools here"
                                  + self._servers_said())
            raise UnknownTool(f"{printable(spec)}: {printable(server)} offers no tool named {printable(name)}")
        found = [tool for tool in self._listed if tool.name == spec]
        if len(found) > 1:
            choices = ", ".join(f"{printable(tool.server)}/{tool.name}" for tool in found)
            raise UnknownTool(f"{printable(spec)} is offered by more than one server: write one of {choices}")
        if found:
            return found[0]
        by_model_name = self.lookup(spec)
        if by_model_name is not None:
            return by_model_name
        shown = ", ".join(tool.name for tool in self._listed[:20]) + (", …" if len(self._listed) > 20 else "")
        raise UnknownTool(f"no tool is named {printable(spec)}" + (f"; the tools are: {shown}" if shown else
                                                                   "; the servers offer no tools"))

    def _servers_said(self) -> str:
        servers = sorted({printable(tool.server) for tool in self._listed})
        return f" (the servers with tools: {', '.join(servers)})" if servers else ""


def _function_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", text)[:MAX_NAME] or "_"


def _model_names(listed: list[ListedTool]) -> list[str]:
    bases = [_function_name(tool.name) for tool in listed]
    counts = Counter(bases)
    taken = {base for base in bases if counts[base] == 1}
    names: list[str] = []
    for tool, base in zip(listed, bases):
        if counts[base] == 1:
            names.append(base)
            continue
        name = prefixed = _function_name(f"{tool.server}_{tool.name}")
        number = 2
        while name in taken:
            suffix = f"_{number}"
            name = prefixed[: MAX_NAME - len(suffix)] + suffix
            number += 1
        taken.add(name)
        names.append(name)
    return names
