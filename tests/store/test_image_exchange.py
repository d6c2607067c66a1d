"""Images in the JSON export (format version 5): each image once per conversation, embedded, and
imported back byte for byte; older exports still import; a hostile export's images end in one
short StoreError with nothing imported, no message and no file (the real store, real files,
real images through intake)."""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import struct
import zlib

import pytest
from PIL import Image as PillowImage

from app.images.limits import MAX_IMAGES_PER_MESSAGE
from app.store import ConversationStore, StoreError, import_file
from app.store.exchange import MAX_IMPORT_TEXT_BYTES, VERSION
from app.store.exported_images import MAX_IMPORT_IMAGES
from app.store.image_files import images_folder

TS = "2024-01-01T00:00:00Z"


@pytest.fixture
def pictures(picture):
    return picture("red"), picture("blue", (40, 30), "JPEG")


@pytest.fixture
def exported(store, pictures, picture) -> dict:
    """A conversation whose two questions name the red image, one the blue too, with a
    deleted version (not exported) and an edit that keeps its images, written as a file would be."""
    red, blue = pictures
    cid = store.create_conversation(title="Colours", model="tiny.gguf")
    question = store.add_message(cid, "user", "Which is warmer?", images=(red, blue))
    store.add_message(cid, "assistant", "Red.")
    store.add_version(question, "Which is warmer, really?")
    store.delete_version(store.add_version(question, "Gone", images=(picture("green"),)))
    store.add_message(cid, "user", "And this one?", images=(red,))
    return json.loads(json.dumps(store.export_json(cid)))


def everything(store: ConversationStore) -> tuple[int, int, int]:
    conn = store._conn
    return tuple(conn.execute("SELECT (SELECT COUNT(*) FROM conversations), (SELECT COUNT(*) FROM messages),"
                              " (SELECT COUNT(*) FROM message_images)").fetchone())


def test_each_image_is_embedded_once_and_imports_back_byte_for_byte(store, exported, pictures):
    red, blue = pictures
    assert exported["version"] == VERSION == 5
    assert exported["images"] == [
        {"digest": red.digest, "media_type": "image/png", "width": 64, "height": 48,
         "data": base64.b64encode(red.data).decode()},
        {"digest": blue.digest, "media_type": "image/jpeg", "width": 40, "height": 30,
         "data": base64.b64encode(blue.data).decode()}]  # the deleted version's image is not exported
    assert [(m["content"], m.get("images")) for m in exported["messages"]] == [
        ("Which is warmer?", [red.digest, blue.digest]), ("Which is warmer, really?", [red.digest, blue.digest]),
        ("Red.", None), ("And this one?", [red.digest])]
    imported = store.import_json(json.dumps(exported))
    assert store.export_json(imported) == exported
    back = [ref for message in store.messages(imported) for ref in message.images]
    assert [store.image(ref).data for ref in back] == [red.data, blue.data, red.data]
    assert [hashlib.sha256(store.image(ref).data).hexdigest() for ref in back] == [red.digest, blue.digest, red.digest]


def test_an_import_into_another_database_writes_the_files_there(exported, pictures, tmp_path):
    other = tmp_path / "other" / "conversations.sqlite3"
    other.parent.mkdir()
    export_file = tmp_path / "colours.json"
    export_file.write_text(json.dumps(exported))
    with ConversationStore(other) as store:
        cid = import_file(other, export_file)  # the worker thread's path: a connection of its own
        assert [store.image(ref) for ref in store.messages(cid)[0].images] == list(pictures)
    assert sorted(path.name.split(".")[1] for path in images_folder(other).rglob("*.*")) == ["jpg", "png"]


def test_an_older_export_without_images_still_imports(store):
    data = {"format": "hearth.conversation", "version": 4,
            "conversation": {"title": "Old", "created_at": TS, "updated_at": TS, "current": 0},
            "images": "ignored by version 4",
            "messages": [{"role": "user", "content": "hi", "images": ["ignored"], "created_at": TS, "updated_at": TS}]}
    (message,) = store.messages(store.import_json(data))
    assert (message.content, message.images) == ("hi", ())


def _png(width: int, height: int, rows: bytes) -> bytes:
    """A PNG made chunk by chunk: any size its header claims, whatever its rows hold."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _entry(data: bytes, **changes) -> dict:
    entry = {"digest": hashlib.sha256(data).hexdigest(), "media_type": "image/png", "width": 1, "height": 1,
             "data": base64.b64encode(data).decode()}
    return {**entry, **changes}


def _gif() -> bytes:
    buffer = io.BytesIO()
    PillowImage.new("RGB", (4, 4), "red").save(buffer, "GIF")
    return buffer.getvalue()


BOMB = _png(50_000, 50_000, b"\x00" * 1000)  # 2.5 billion pixels claimed, a few hundred bytes


def _hostile(exported: dict, change) -> dict:
    data = copy.deepcopy(exported)
    change(data)
    return data


# name -> (change to a good export, words the message must hold)
HOSTILE = {
    "data that is not base64": (lambda d: d["images"][0].update(data="not base64!"), "images[0].data is not base64"),
    "data with a character outside base64": (lambda d: d["images"][0].update(data=d["images"][0]["data"] + "é"),
                                             "images[0].data is not base64"),
    "a digest that is not the bytes'": (lambda d: d["images"][1].update(digest=d["images"][0]["digest"]),
                                        "images[1].digest"),
    "a decompression bomb": (lambda d: d["images"].append(_entry(BOMB)), "images[2] cannot be imported"),
    "a truncated image": (lambda d: d["images"].append(_entry(base64.b64decode(d["images"][0]["data"])[:50])),
                          "images[2] cannot be imported"),
    "an image intake would convert": (lambda d: d["images"].append(_entry(_gif(), width=4, height=4)),
                                      "not an image as Hearth stores it"),
    "a size that is not the image's": (lambda d: d["images"][0].update(width=640), "says it is 640 × 48"),
    "a media type that is not the image's": (lambda d: d["images"][1].update(media_type="image/png"),
                                             "but it is 40 × 30 JPEG"),
    "too many images": (lambda d: d.update(images=[{}] * (MAX_IMPORT_IMAGES + 1)),
                        f"{MAX_IMPORT_IMAGES + 1:,} images; Hearth imports conversations of up to"),
    "an image twice": (lambda d: d["images"].append(d["images"][0]), "images[2] is in the export twice"),
    "images that are not a list": (lambda d: d.update(images={}), "images has the wrong type"),
    "an entry that is not an object": (lambda d: d["images"].append("x"), "images[2] must be an object"),
    "an entry without its data": (lambda d: d["images"][0].pop("data"), 'images[0] is missing "data"'),
    "a width that is text": (lambda d: d["images"][0].update(width="64"), "images[0].width has the wrong type"),
    "a width that is true": (lambda d: d["images"][0].update(width=True), "images[0].width has the wrong type"),
    "a digest that names no image": (lambda d: d["messages"][3].update(images=["0" * 64]),
                                     "messages[3].images[0] names an image that is not in the export's images"),
    "a message naming an image by number": (lambda d: d["messages"][3].update(images=[0]),
                                            "not in the export's images"),
    "images on a reply": (lambda d: d["messages"][2].update(images=[d["images"][0]["digest"]]),
                          "messages[2] has images, which only a user message holds"),
    "a message's images that are text": (lambda d: d["messages"][0].update(images="red"),
                                         "messages[0].images has the wrong type"),
    "more images than a message holds": (
        lambda d: d["messages"][0].update(images=[d["images"][0]["digest"]] * (MAX_IMAGES_PER_MESSAGE + 1)),
        f"a message holds up to {MAX_IMAGES_PER_MESSAGE}"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_each_hostile_image_is_one_clear_message_and_imports_nothing(store, exported, tmp_path, name):
    change, words = HOSTILE[name]
    data = _hostile(exported, change)
    before, files = everything(store), sorted(images_folder(store.path).rglob("*"))
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    for attempt in (lambda: import_file(store.path, path), lambda: store.import_json(data)):
        with pytest.raises(StoreError) as raised:
            attempt()
        message = str(raised.value)
        assert words in message and len(message) < 400 and "\n" not in message, message[:500]
    assert everything(store) == before and sorted(images_folder(store.path).rglob("*")) == files


def test_a_bad_last_message_writes_no_image(store, exported, picture, tmp_path):
    """The images are checked with the file, and written with its messages in one transaction."""
    yellow = picture("yellow")
    data = _hostile(exported, lambda d: d["images"].append(_entry(yellow.data, width=64, height=48)))
    data["messages"][3]["images"] = [yellow.digest]
    data["messages"][-1]["created_at"] = "yesterday"
    with pytest.raises(StoreError, match="ISO-8601"):
        store.import_json(data)
    assert not list(images_folder(store.path).rglob(f"{yellow.digest}*"))
    data["messages"][-1]["created_at"] = TS  # mended, it imports with the image
    assert store.messages(store.import_json(data))[-1].images == (yellow.ref,)
    assert store.image(yellow.ref) == yellow


def test_megabytes_of_text_beside_the_images_are_refused_before_they_are_read(store, tmp_path):
    """Small JSON values cost some twenty times their bytes once read: only an image's data may
    take an export past MAX_IMPORT_TEXT_BYTES."""
    path = tmp_path / "numbers.json"
    path.write_bytes(b'{"format": "hearth.conversation", "version": 5, "x": [' + b"0," * (MAX_IMPORT_TEXT_BYTES // 2)
                     + b"0]}")
    with pytest.raises(StoreError, match="more than 32 MB of text"):
        import_file(store.path, path)
    assert everything(store) == (0, 0, 0)
