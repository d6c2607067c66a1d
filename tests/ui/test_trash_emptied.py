"""The window's start empties the trash (ui/app/application.open_store): the trash holds only
what the window's Undo may bring back, and no Undo outlives its window, so a conversation the
user deleted, and the image files only it used, are gone at the next start, not kept forever;
an image another conversation still uses stays."""

from __future__ import annotations

import io

from PIL import Image as PillowImage

from app.images.intake import read_image
from app.store import ConversationStore, StoreError
from app.store.image_files import images_folder
from app.ui.app.application import open_store


def picture(colour: str):
    buffer = io.BytesIO()
    PillowImage.new("RGB", (32, 24), colour).save(buffer, "PNG")
    return read_image(buffer.getvalue(), f"{colour}.png")


def image_files(path) -> set[str]:
    return {file.name for file in images_folder(path).rglob("*") if file.is_file()}


def test_the_windows_start_erases_what_was_deleted_and_the_images_only_it_used(qtbot, tmp_path):
    path = tmp_path / "conversations.sqlite3"
    red, blue = picture("red"), picture("blue")
    with ConversationStore(path) as store:
        deleted = store.create_conversation(title="Gone")
        store.add_message(deleted, "user", "Look", images=(red, blue))
        kept = store.create_conversation(title="Kept")
        store.add_message(kept, "user", "And this", images=(blue,))
        store.delete(deleted)  # the trash: the window's Undo could bring it back until it closes
        assert len(image_files(path)) == 2
    store = open_store(path)
    try:
        assert [c.id for c in store.list_conversations()] == [kept]
        try:
            store.get_conversation(deleted)
            raise AssertionError("the deleted conversation outlived the restart")
        except StoreError:
            pass
        assert image_files(path) == {f"{blue.digest}.png"}
        assert store.image(store.messages(kept)[0].images[0]).data == blue.data
    finally:
        store.close()
