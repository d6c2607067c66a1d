"""Every limit of the images room, declared once, each with its reason: what intake accepts from
one file or data: URL, what it keeps, and how many images one message may carry. intake.py,
pixels.py, the front ends (window, `hearth chat --image`, `hearth serve`) and the tests read them
from here."""

from app.common.units import MB

# Reading. A 50 MP phone photo is about 25 MB as JPEG and an 8K screenshot about 30 MB as PNG;
# a larger file is not a picture someone attaches, and it is refused by its size (on disk, or
# from a data: URL's length) before a byte of it is read or decoded.
MAX_IMAGE_BYTES = 50 * MB

# Decoding. The most pixels decoded from one image: 40 MP covers an 8K screen (7680 × 4320 =
# 33 MP) and is at most 160 MB decoded (RGBA). The size is read from the file's header and
# checked before anything is decoded, so a decompression bomb (a 50,000 × 50,000 PNG of a few
# KB, 10 GB decoded) is refused without allocating its pixels. A larger JPEG is decoded straight
# to 1/2, 1/4 or 1/8 of its size (libjpeg scales while decoding), and that is the size counted:
# a 50 or 200 MP phone photo decodes to under 13 MP.
MAX_PIXELS = 40_000_000

# Chunks in one PNG, segments in one JPEG: Pillow walks them one by one in Python, so 50 MB of
# empty ones (4 million) would take half a minute. A PNG has a few dozen, or one per 8 KB of image
# data (libpng's IDAT size: 6,100 in 50 MB), an APNG two a frame; a JPEG a few dozen.
MAX_PARTS = 100_000

# Scans in one JPEG. Each scan of a progressive JPEG is a pass over all of its blocks, however few
# bytes it takes: 2,000 repeated 14-byte scans make a 4 MP JPEG of 44 KB take 13 s, and 50 MB of
# them would take hours. Encoders write about ten (libjpeg's progressive script: 10; Photoshop:
# 3 to 5); the few more an EXIF thumbnail adds are counted too.
MAX_JPEG_SCANS = 100

# Keeping. The longest side an image keeps; a larger one is downscaled before it is stored or
# sent. Projectors resize to far less (Gemma 3 to 896, SigLIP to 384 or 448, Qwen2.5-VL to about
# a megapixel), so 2048 keeps all they can use and leaves an image at most 12 MB as RGB pixels.
MAX_SIDE = 2048

# Re-encoding a photo (a JPEG source that had to change: rotated, downscaled, CMYK): high enough
# that a second generation of JPEG loss cannot be seen, far smaller than PNG for a photo.
JPEG_QUALITY = 92

# Images in one message. Each costs hundreds to thousands of tokens (Gemma 3: 256; Qwen2.5-VL
# at 2048 px: over 1,000) and an encoder pass; 16 already fill a small model's context, and more
# is a folder dropped by mistake. More is refused with a message, never cut silently.
MAX_IMAGES_PER_MESSAGE = 16

# The formats intake reads, recognised by their bytes (never by a file's name), and the media
# types a data: URL may name for them ("image/jpg" and "image/x-ms-bmp" are common misspellings
# clients send). GIF and BMP are re-encoded as PNG; PNG, JPEG and WebP may be kept as they are.
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
FORMAT_NAMES = "PNG, JPEG, WebP, GIF or BMP"  # as messages name them
DATA_URL_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif", "image/bmp", "image/x-ms-bmp"}
)
