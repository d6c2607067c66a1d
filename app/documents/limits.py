"""Every limit of the documents room, declared once: what a reader accepts from one file and
how big a chunk may be. The readers and chunking.py read them from here, and so do the tests."""

# Reading one file (readers/)
MAX_FILE_BYTES = 50 * 1000 * 1000  # a larger file is refused by its size, before a byte is read
MAX_TEXT_CHARS = 20 * 1000 * 1000  # text one file may yield (a small PDF or .docx can inflate)
MAX_PDF_PAGES = 10_000  # a PDF claiming more is refused rather than walked
MAX_UNZIPPED_BYTES = 200 * 1000 * 1000  # a .docx's members together, as their zip directory says
BINARY_CONTROL_SHARE = 0.01  # control characters (not tab, newline, form feed) beyond this: binary
DETECT_SAMPLE_BYTES = 1024 * 1024  # what charset-normalizer looks at to name an encoding

# Chunks (chunking.py), in the embedding model's tokens
EMBED_MAX_TOKENS = 512  # the default model's window (all-MiniLM-L6-v2); no chunk comes near it
CHUNK_TOKENS = 256  # the most one chunk holds, overlap included
OVERLAP_TOKENS = 32  # of the previous chunk's end, repeated at the start of the next (same page)
MAX_CHUNK_CHARS = 4000  # whatever the tokens: a run the tokenizer calls one [UNK] stays readable

# Indexing (indexing.py)
EMBED_BATCH = 32  # chunks handed to the embedding model at once (it packs them into its batch)

# Searching (search.py)
RRF_K = 60  # reciprocal rank fusion's constant, as in the paper and in LocalDocs
CANDIDATES = 50  # how many each search ranks before fusion
TOP = 5  # hits a search gives unless asked for more (and the sources a reply is given in the window)
MAX_TOP = 20  # the most sources the window gives a reply (Settings → Documents)
MAX_TERMS = 32  # a pasted page as a query is cut to its first words: each term is a posting list read
MAX_QUERY_CHARS = 10_000  # and a pasted book to its first characters before they are split
# The chunks BM25 may score for one query, counted from its terms' chunk counts (telling_terms):
# about 15 ms of FTS5's time on this machine.
SCORED_CHUNKS = 8_000
