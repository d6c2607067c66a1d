import io

import pytest
from PIL import Image as PillowImage

from app.images.image import Image
from app.images.intake import read_image
from app.store import ConversationStore


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "conversations.sqlite3"


@pytest.fixture
def store(db_path):
    with ConversationStore(db_path) as opened:
        yield opened


@pytest.fixture
def picture():
    """A factory of real images as intake leaves them: a plain colour, PNG unless told, drawn by
    Pillow and read through app.images.intake."""

    def make(color: str, size: tuple[int, int] = (64, 48), kind: str = "PNG") -> Image:
        buffer = io.BytesIO()
        PillowImage.new("RGB", size, color).save(buffer, kind)
        return read_image(buffer.getvalue(), f"{color}.{kind.lower()}")

    return make
