"""A pure-Python model of the conversation store's message tree, for the property test of
versions (tests/test_versions_property.py).

It is written from the store's documented rules (app/store/conversations.py's docstrings and
the issue's API), not from its SQL: a new message ends the branch shown; a version is a sibling;
showing a version shows, below it, the branch seen last there; deleting a version hides it and
everything below it, and if the branch shown went through it, the version before it is shown
(else the one after, else its parent); Undo brings back exactly what that deletion hid, and the
branch that was shown. Message ids are predicted as the store's SQLite assigns them (one more
than the largest, rows are never removed), so the model and the store can be compared by id.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    """One message as the model knows it."""

    id: int
    conversation_id: int
    parent_id: int | None
    position: int
    role: str
    content: str
    status: str
    viewed: int  # when it was last the end of the branch shown (a logical clock)
    deleted_by: int | None = None  # the deletion hiding it, until that is undone


@dataclass
class Deletion:
    """One Delete version: what it hid and the branch that was shown before it."""

    conversation_id: int
    top: int
    leaf_before: int | None
    hidden: list[int] = field(default_factory=list)
    undone: bool = False


class TreeModel:
    """Every conversation's tree, with each conversation's stored leaf (the end of the branch shown)."""

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        self.leaf_ids: dict[int, int | None] = {}
        self.deletions: list[Deletion] = []
        self._clock = 0
        self._next_id = 1

    # --- what the store is asked to do ---------------------------------------------------------

    def create_conversation(self, conversation_id: int) -> None:
        self.leaf_ids[conversation_id] = None

    def add_message(self, conversation_id: int, role: str, content: str, status: str = "complete") -> int:
        """A message appended under the end of the branch shown, which it now ends."""
        leaf = self.leaf(conversation_id)
        parent, position = (leaf.id, leaf.position + 1) if leaf else (None, 0)
        return self._insert(conversation_id, parent, position, role, content, status)

    def add_version(self, message_id: int, content: str, status: str = "complete") -> int:
        """A sibling of the message (same role and parent), which now ends the branch shown."""
        original = self.nodes[message_id]
        assert original.deleted_by is None
        return self._insert(original.conversation_id, original.parent_id, original.position, original.role,
                            content, status)

    def finish(self, message_id: int, content: str, status: str) -> None:
        node = self.nodes[message_id]
        assert node.status == "streaming"
        node.content, node.status = content, status

    def show_version(self, message_id: int) -> int:
        leaf = self._last_seen_leaf(message_id)
        self._set_leaf(self.nodes[message_id].conversation_id, leaf)
        return leaf

    def delete_version(self, message_id: int) -> Deletion:
        message = self.nodes[message_id]
        assert message.deleted_by is None
        conversation_id = message.conversation_id
        leaf = self.leaf(conversation_id)
        deletion = Deletion(conversation_id, message_id, leaf.id if leaf else None)
        deletion.hidden = self._subtree(message_id)
        for hidden in deletion.hidden:
            self.nodes[hidden].deleted_by = len(self.deletions)
        self.deletions.append(deletion)
        if leaf is not None and leaf.deleted_by is not None:
            instead = self.sibling(message_id, -1) or self.sibling(message_id, 1)
            self._set_leaf(conversation_id, self._last_seen_leaf(instead) if instead else message.parent_id)
        return deletion

    def restore_version(self, deletion: Deletion) -> None:
        assert not deletion.undone
        number = self.deletions.index(deletion)
        for node in self.nodes.values():
            if node.deleted_by == number:
                node.deleted_by = None
        deletion.undone = True
        if deletion.leaf_before is not None:
            self._set_leaf(deletion.conversation_id, self._last_seen_leaf(deletion.leaf_before))

    def branch_from(self, message_id: int, conversation_id: int) -> None:
        """A new conversation holding a copy of the path up to the message, shown to its end."""
        self.create_conversation(conversation_id)
        path = self._path(message_id)
        self._clock += 1
        parent = None
        for original in path:
            copy = Node(self._next_id, conversation_id, parent, original.position, original.role, original.content,
                        original.status, self._clock)
            self.nodes[copy.id] = copy
            self._next_id += 1
            parent = copy.id
        self._set_leaf(conversation_id, parent)

    # --- what the store should answer -----------------------------------------------------------

    def leaf(self, conversation_id: int) -> Node | None:
        """The end of the branch shown: the stored leaf while it is live, else the live end of a
        branch seen last (a conversation whose leaf was hidden)."""
        stored = self.leaf_ids[conversation_id]
        if stored is not None and self.nodes[stored].deleted_by is None:
            return self.nodes[stored]
        ends = [n for n in self.live(conversation_id) if not self._live_children(n.id)]
        return max(ends, key=lambda n: (n.viewed, n.id), default=None)

    def branch(self, conversation_id: int) -> list[Node]:
        leaf = self.leaf(conversation_id)
        return self._path(leaf.id) if leaf else []

    def live(self, conversation_id: int) -> list[Node]:
        """Every live message, parents first (by depth, then id), as export_json lists them."""
        return sorted((n for n in self.nodes.values() if n.conversation_id == conversation_id and n.deleted_by is None),
                      key=lambda n: (n.position, n.id))

    def siblings(self, message_id: int) -> list[Node]:
        """The live versions of the message, itself included, oldest first."""
        message = self.nodes[message_id]
        return sorted((n for n in self.nodes.values() if n.conversation_id == message.conversation_id
                       and n.parent_id == message.parent_id and n.deleted_by is None), key=lambda n: n.id)

    def sibling(self, message_id: int, step: int) -> int | None:
        ids = [n.id for n in self.siblings(message_id)]
        wanted = [i for i in ids if (i > message_id if step > 0 else i < message_id)]
        return (min(wanted) if step > 0 else max(wanted)) if wanted else None

    def version(self, message_id: int) -> tuple[int, int]:
        """(version, versions) as StoredMessage counts them."""
        ids = [n.id for n in self.siblings(message_id)]
        return sum(1 for i in ids if i <= message_id), len(ids)

    def history(self, conversation_id: int, before: int | None = None) -> list[dict]:
        """What a reply reads: the branch shown (above position `before`), failed empty replies left out."""
        return [{"role": n.role, "content": n.content} for n in self.branch(conversation_id)
                if (before is None or n.position < before) and n.role in ("user", "assistant")
                and not (n.status == "error" and not n.content)]

    # --- internals ------------------------------------------------------------------------------

    def _insert(self, conversation_id: int, parent_id: int | None, position: int, role: str, content: str,
                status: str) -> int:
        self._clock += 1
        node = Node(self._next_id, conversation_id, parent_id, position, role, content, status, self._clock)
        self.nodes[node.id] = node
        self._next_id += 1
        self.leaf_ids[conversation_id] = node.id
        return node.id

    def _set_leaf(self, conversation_id: int, leaf_id: int | None) -> None:
        self.leaf_ids[conversation_id] = leaf_id
        if leaf_id is not None:
            self._clock += 1
            self.nodes[leaf_id].viewed = self._clock

    def _live_children(self, message_id: int) -> list[Node]:
        return [n for n in self.nodes.values() if n.parent_id == message_id and n.deleted_by is None]

    def _subtree(self, top: int) -> list[int]:
        """top and every live message below it (a part deleted earlier stays with its own deletion)."""
        found, todo = [top], [top]
        while todo:
            children = [n.id for n in self._live_children(todo.pop())]
            found += children
            todo += children
        return found

    def _last_seen_leaf(self, top: int) -> int:
        """The end of a branch below top (itself included) seen last; among those never seen, the newest."""
        ends = [self.nodes[i] for i in self._subtree(top) if not self._live_children(i)]
        return max(ends, key=lambda n: (n.viewed, n.id)).id

    def _path(self, message_id: int) -> list[Node]:
        path = []
        node: Node | None = self.nodes[message_id]
        while node is not None:
            path.append(node)
            node = self.nodes[node.parent_id] if node.parent_id is not None else None
        return path[::-1]
