"""Images stored with their messages (the real store, real files, real images through intake):
one file per image beside the database, named by its digest; references read with the message,
bytes read back checked; a file deleted with the last message that names it once the trash is
emptied, never before; a missing or damaged file one clear MissingImage, with the conversation
still open; the history a reply reads carries the images."""

from __future__ import annotations

import hashlib

import pytest

from app.common.sqlite_files import move_aside
from app.conversation.history import history
from app.engine.types import ReplyStatus
from app.images.image import ImageError
from app.images.limits import MAX_IMAGES_PER_MESSAGE
from app.store import ConversationStore, MissingImage, StoreError
from app.store.image_files import EXTENSIONS, images_folder


def files_on_disk(store: ConversationStore) -> dict[str, bytes]:
    """Every file under the images folder, by its path inside it."""
    folder = images_folder(store.path)
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def file_of(image) -> str:
    """Where an image's file is inside the images folder."""
    return f"{image.digest[:2]}/{image.digest}.{EXTENSIONS[image.media_type]}"


def test_a_message_with_two_images_comes_back_in_order_and_an_image_is_stored_once(store, picture, db_path):
    red, blue = picture("red"), picture("blue", (32, 32), "JPEG")
    cid = store.create_conversation()
    first = store.add_message(cid, "user", "Which is warmer?", images=(red, blue))
    written = (images_folder(db_path) / file_of(red)).stat().st_ino
    store.add_message(cid, "assistant", "The red one.")
    again = store.add_message(cid, "user", "And this?", images=(red, red))  # the same image, twice
    assert (images_folder(db_path) / file_of(red)).stat().st_ino == written  # found whole, not written again
    assert store.message(first).images == (red.ref, blue.ref)
    assert [m.images for m in store.messages(cid)] == [(red.ref, blue.ref), (), (red.ref, red.ref)]
    assert store.recent_messages(cid, 1).messages[0].images == (red.ref, red.ref)
    assert files_on_disk(store) == {file_of(red): red.data, file_of(blue): blue.data}
    assert db_path.parent / f"{db_path.name}-images" == images_folder(db_path)
    store.close()
    with ConversationStore(db_path) as reopened:
        back = reopened.image(reopened.message(again).images[1])
        assert (back.data, back.digest, back.media_type, back.width, back.height) == (
            red.data, hashlib.sha256(red.data).hexdigest(), "image/png", 64, 48)
        assert reopened.image(blue.ref) == blue and reopened.image(blue.ref).data == blue.data


def test_only_a_user_message_holds_images_and_no_more_than_a_message_may(store, picture):
    cid = store.create_conversation()
    red = picture("red")
    with pytest.raises(StoreError, match="Only a user message holds images"):
        store.add_message(cid, "assistant", "Look", images=(red,))
    with pytest.raises(StoreError, match=f"up to {MAX_IMAGES_PER_MESSAGE} images"):
        store.add_message(cid, "user", "Many", images=(red,) * (MAX_IMAGES_PER_MESSAGE + 1))
    assert store.messages(cid) == [] and files_on_disk(store) == {}
    reply = store.add_message(cid, "user", "Fine", images=(red,) * MAX_IMAGES_PER_MESSAGE)
    assert len(store.message(reply).images) == MAX_IMAGES_PER_MESSAGE


def test_an_edit_keeps_or_changes_the_images_and_a_branch_names_the_same_files(store, picture):
    red, green = picture("red"), picture("green")
    cid = store.create_conversation()
    question = store.add_message(cid, "user", "What colour?", images=(red,))
    store.add_message(cid, "assistant", "Red.")
    kept = store.add_version(question, "What colour is it?")
    changed = store.add_version(question, "And now?", images=(green, red))
    removed = store.add_version(question, "No picture.", images=())
    assert [store.message(i).images for i in (kept, changed, removed)] == [(red.ref,), (green.ref, red.ref), ()]
    regenerated = store.add_version(store.add_message(cid, "assistant", "Nothing to see."), "Still nothing.")
    assert store.message(regenerated).images == ()
    branch = store.branch_from(store.show_version(changed))
    (copy,) = store.messages(branch)
    assert copy.images == (green.ref, red.ref) and store.image(copy.images[0]) == green
    assert len(files_on_disk(store)) == 2


def test_a_file_goes_with_the_last_message_that_names_it_when_the_trash_is_emptied(store, picture):
    red, green = picture("red"), picture("green")
    first, second = store.create_conversation(title="First"), store.create_conversation(title="Second")
    store.add_message(first, "user", "Both", images=(red, green))
    store.add_message(second, "user", "Red again", images=(red,))
    store.delete(first)
    assert store.image(green.ref) == green  # in the trash: Undo may still bring it back
    store.restore(first)
    store.delete(first)
    assert len(files_on_disk(store)) == 2
    assert store.purge_deleted() == 1
    assert files_on_disk(store) == {file_of(red): red.data}  # the second conversation still names it
    with pytest.raises(MissingImage, match="is not there any more"):
        store.image(green.ref)
    store.delete(second)
    store.purge_deleted()
    assert files_on_disk(store) == {}


def test_a_deleted_version_keeps_its_images_until_the_trash_is_emptied(store, picture):
    red, blue = picture("red"), picture("blue")
    cid = store.create_conversation()
    question = store.add_message(cid, "user", "Red?", images=(red,))
    edited = store.add_version(question, "Blue?", images=(blue,))
    store.delete_version(edited)
    assert store.image(blue.ref) == blue
    store.purge_deleted()  # deleted versions are erased with the trash
    assert files_on_disk(store) == {file_of(red): red.data}
    deleted = store.delete_version(question)
    assert store.image(red.ref) == red  # hidden, not erased: Undo brings it back
    store.restore_version(deleted)
    assert store.messages(cid)[0].images == (red.ref,) and store.image(red.ref) == red
    store.delete_version(question)
    store.purge_deleted()
    assert files_on_disk(store) == {}


def test_a_missing_or_damaged_file_is_one_clear_error_and_the_conversation_still_opens(store, picture):
    red = picture("red")
    cid = store.create_conversation(title="Sunset <b>photos</b>")
    store.add_message(cid, "user", "Look", images=(red,))
    path = images_folder(store.path) / file_of(red)
    path.write_bytes(red.data[:-1] + b"\x00")  # the same size, other bytes
    with pytest.raises(MissingImage) as damaged:
        store.image(red.ref)
    assert isinstance(damaged.value, ImageError) and isinstance(damaged.value, StoreError)
    assert str(damaged.value) == (
        f"The image 64 × 48 PNG, sha256 {red.digest[:8]} in the conversation “Sunset <b>photos</b>” cannot be "
        f"used: its file {path} no longer holds the image that was attached.")
    store.add_message(cid, "user", "Again", images=(red,))  # sending it again mends the file
    assert store.image(red.ref) == red
    path.unlink()
    with pytest.raises(MissingImage, match=f"its file {path} is not there any more"):
        store.image(red.ref)
    message = store.messages(cid)[0]  # the message still reads, with its reference
    assert (message.content, message.images) == ("Look", (red.ref,))
    assert "Image: 64 × 48 PNG" in store.export_markdown(cid)
    with pytest.raises(MissingImage):  # an export would lose the image: refused, naming it
        store.export_json(cid)
    store.add_message(cid, "user", "Once more", images=(red,))  # and writes it again
    assert store.image(red.ref) == red


def test_a_file_swapped_for_a_larger_one_is_damaged_and_never_read_whole(store, picture, monkeypatch):
    from app.store import image_links
    red = picture("red")
    cid = store.create_conversation()
    store.add_message(cid, "user", "Look", images=(red,))
    monkeypatch.setattr(image_links, "MAX_IMAGE_BYTES", len(red.data) + 10)
    (images_folder(store.path) / file_of(red)).write_bytes(red.data + b"\x00" * 1000)
    with pytest.raises(MissingImage, match="no longer holds the image"):
        store.image(red.ref)


def test_the_sweep_at_start_takes_only_files_no_message_names(db_path, picture):
    red, blue = picture("red"), picture("blue")
    with ConversationStore(db_path) as store:
        store.add_message(store.create_conversation(), "user", "Kept", images=(red,))
    folder = images_folder(db_path)
    stray = {folder / file_of(blue): blue.data,  # a crash between the file and its message
             folder / blue.digest[:2] / f".{blue.digest[:16]}-x.partial": b"half",  # a crash mid-write
             folder / "notes.txt": b"the user's", folder / "zz" / "other.png": b"not ours",
             folder / red.digest[:2] / "readme": b"not ours either"}
    for path, data in stray.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    with ConversationStore(db_path, recover=False):  # beside a running Hearth: nothing is swept
        pass
    assert all(path.exists() for path in stray)
    with ConversationStore(db_path) as store:
        assert store.image(red.ref) == red
    assert [path.exists() for path in stray] == [False, False, True, True, True]
    assert (folder / file_of(red)).read_bytes() == red.data


def test_history_gives_a_question_its_images(store, picture):
    red, blue = picture("red"), picture("blue")
    cid = store.create_conversation()
    store.add_message(cid, "user", "Which is warmer?", images=(red, blue))
    reply = store.add_message(cid, "assistant", "", status=ReplyStatus.STREAMING)
    store.finish_message(reply, "Red.")
    store.add_message(cid, "user", "Thanks")
    read = history(store, cid, "Be brief.")
    assert read[1] == {"role": "user", "content": "Which is warmer?", "images": (red, blue)}
    assert [image.data for image in read[1]["images"]] == [red.data, blue.data]
    assert read[2:] == [{"role": "assistant", "content": "Red."}, {"role": "user", "content": "Thanks"}]
    (images_folder(store.path) / file_of(blue)).unlink()
    with pytest.raises(MissingImage, match=f"sha256 {blue.digest[:8]}.*is not there any more"):
        history(store, cid, "")  # never a reply to a question with one image silently gone
    assert history(store, cid, "", before=0) == []


def test_markdown_names_each_image_before_the_text(store, picture):
    red, blue = picture("red"), picture("blue", (640, 480), "JPEG")
    cid = store.create_conversation(title="Colours")
    store.add_message(cid, "user", "Compare [these]: (javascript:x)", images=(red, blue))
    store.add_message(cid, "user", "", images=(red,))
    text = store.export_markdown(cid)
    assert (f"## User\n\n\\[Image: 64 × 48 PNG, sha256 {red.digest[:8]}\\]\n\n"
            f"\\[Image: 640 × 480 JPEG, sha256 {blue.digest[:8]}\\]\n\nCompare [these]: (javascript:x)\n\n") in text
    assert text.endswith(f"## User\n\n\\[Image: 64 × 48 PNG, sha256 {red.digest[:8]}\\]\n")  # no empty paragraph


def test_a_database_moved_aside_takes_its_images_and_the_fresh_one_sweeps_none_of_them(db_path, picture):
    red = picture("red")
    with ConversationStore(db_path) as store:
        store.add_message(store.create_conversation(title="Kept"), "user", "Look", images=(red,))
    moved = move_aside(db_path)  # a damaged database, moved aside to start fresh
    with ConversationStore(db_path) as fresh:
        assert fresh.list_conversations() == []
    with ConversationStore(moved) as old:
        (message,) = old.messages(old.list_conversations()[0].id)
        assert old.image(message.images[0]) == red
    assert (images_folder(moved) / file_of(red)).read_bytes() == red.data
