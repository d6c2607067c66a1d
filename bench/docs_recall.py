"""Retrieval quality: recall@5 of BM25 alone, vectors alone and hybrid, on questions in other words.

    .venv/bin/python bench/docs_recall.py [--cache DIR] [--topics N] [--keep DIR]

Issue #28 asks for retrieval quality measured, not asserted. The corpus is text that ships with
Python: the Language Reference topics of pydoc_data.topics (79 topics, about 465,000 characters on
Python 3.11), one file per topic, spread over every format Hearth reads and this machine can
write (topic i in format i % 5): Markdown (.md, the topic's underlined titles made `#` headings,
its indented blocks fenced), plain text (.txt, as written), HTML (.html, h1-h3, <p>, <pre>),
Word (.docx, python-docx: Heading 1-3 paragraphs) and PDF (PDFium through pypdfium2, as the
tests write them: 42 lines of at most 95 characters a page, the quotes and dashes Helvetica lacks
made ASCII). The files are named by number, not by topic, so a file's name tells nothing.

It is indexed through the real path: indexing.index_paths into a DocumentIndex, embedded by
LlamaEmbedder with the default model (all-MiniLM-L6-v2, converted on first use into --cache,
Hearth's own embedding-model cache unless given). Indexing throughput is timed over
index_paths (reading, chunking, embedding, writing; the model's load apart) in files, chunks and
pages per second, where a page is one PDF page for a PDF and 3,000 characters of the topic's text
for the other formats (a printed page of prose; these PDFs, broken where the topics break their
lines, hold about 1,300 a page: 24 of the corpus's 169 pages).

The questions (docs_recall_questions.py, 42 of them) are written the way a user asks, in other
words than the topics use: "how do I make a function that hands back values one at a time,
picking up where it left off" for the yield topic. Each names the topics that answer it, and a
phrase of the answer that every one of those topics holds; topics copy each other's sections
(compound holds if, while, for, try, with, function and class; specialnames holds customization,
attribute-access and others), so a question is answered by every topic that holds its phrase, and
the bench checks that the named topics are exactly those.

For each question, the top 5 chunks of three searches over the same index (search.py): BM25
alone (DocumentSearch.search with query_vector=None), the vectors alone (DocumentSearch.nearest,
the chunks' cosine to the question's embedding) and the hybrid (DocumentSearch.search with the
vector: both, fused by reciprocal rank). Recall@5: the share of questions with an answering file
among the sources of the 5 chunks; also the mean reciprocal rank of the first answering chunk
within the 5 (0 when none). The issue wants the hybrid above both; the bench prints what it
measures, and its exit status says whether that held. Results also go to
bench/results/docs_recall.json, each question's hits included.

Measured on this machine (2 cores, the whole topics dict: 722 chunks, no subset needed): recall@5
BM25 55%, vectors 69%, hybrid 74% (23, 29 and 31 of 42; MRR@5 0.33, 0.56, 0.56). The hybrid is
ahead of the vectors by two questions (it found four they missed, three of them BM25's and one
neither found alone, and lost two they found), a margin 42 questions cannot tell from chance:
what it shows is that the fusion loses nothing to the vectors and gains much over BM25 alone,
whose words for a question ("number", "value", "function") are in many topics. Indexing took 93 s on an idle machine
(1.8 pages/s, 7.8 chunks/s: the embedding is nearly all of it) and 161 s with tests running
beside it; the whole run, under 3 minutes.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # support.pdf_pages: PDFs written as the tests write them

FORMATS = (".md", ".txt", ".html", ".docx", ".pdf")
TOP = 5
PAGE_CHARS = 3000  # a page of a format without pages
PDF_LINES = 42  # what fits a US-letter page as tests/support/pdf_pages.py writes one (11 pt, 1.5 leading)
PDF_WIDTH = 95  # characters a line, within the page at 11 pt Helvetica
# What standard Helvetica (Latin-1) lacks among the topics' characters, and its stand-in.
ASCII = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "—": "--", "–": "-"})
_UNDERLINE = re.compile(r"([*=\-])\1{2,}\s*")
LEVELS = {"*": 1, "=": 2, "-": 3}


@dataclass(frozen=True)
class Block:
    """One piece of a topic: a heading (level 1-3), a paragraph of prose, or an indented block
    (grammar, code, a table) whose lines are kept as they are."""

    kind: str  # "heading", "prose" or "pre"
    text: str
    level: int = 0


def blocks(text: str) -> list[Block]:
    """A topic's text (reStructuredText as pydoc writes it) in blocks."""
    found: list[Block] = []
    lines = text.split("\n")
    gathered: list[str] = []

    def end() -> None:
        if gathered:
            indented = all(line.startswith(" ") for line in gathered)
            body = "\n".join(gathered) if indented else "\n".join(line.strip() for line in gathered)
            found.append(Block("pre" if indented else "prose", body))
            gathered.clear()

    number = 0
    while number < len(lines):
        line = lines[number]
        following = lines[number + 1] if number + 1 < len(lines) else ""
        underlined = _UNDERLINE.fullmatch(following) and len(following.strip()) >= len(line.strip()) - 2
        if line.strip() and not gathered and underlined:
            found.append(Block("heading", line.strip(), LEVELS[following.strip()[0]]))
            number += 2
            continue
        if line.strip():
            gathered.append(line)
        else:
            end()
        number += 1
    end()
    return found


def write_markdown(path: Path, parts: list[Block]) -> None:
    out = []
    for block in parts:
        if block.kind == "heading":
            out.append("#" * block.level + " " + block.text)
        elif block.kind == "pre":
            out.append("```\n" + block.text + "\n```")
        else:
            out.append(block.text)
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")


def write_html(path: Path, parts: list[Block]) -> None:
    title = next((block.text for block in parts if block.kind == "heading"), "")
    out = [f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head><body>"]
    for block in parts:
        if block.kind == "heading":
            out.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif block.kind == "pre":
            out.append(f"<pre>{html.escape(block.text)}</pre>")
        else:
            out.append(f"<p>{html.escape(' '.join(block.text.split()))}</p>")
    path.write_text("\n".join(out) + "\n</body></html>\n", encoding="utf-8")


def write_docx(path: Path, parts: list[Block]) -> None:
    import docx

    document = docx.Document()
    for block in parts:
        if block.kind == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.kind == "pre":
            document.add_paragraph(block.text)  # its newlines become line breaks
        else:
            document.add_paragraph(" ".join(block.text.split()))
    document.save(path)


def write_pdf_topic(path: Path, text: str) -> int:
    """The topic's lines in pages; returns how many pages."""
    from support.pdf_pages import write_pdf

    lines: list[str] = []
    for line in text.translate(ASCII).split("\n"):
        line = line.encode("latin-1", "replace").decode("latin-1")
        while len(line) > PDF_WIDTH:
            cut = line.rfind(" ", 0, PDF_WIDTH)
            cut = cut if cut > 0 else PDF_WIDTH
            lines.append(line[:cut])
            line = "   " + line[cut:].lstrip()
        lines.append(line)
    pages = [lines[start:start + PDF_LINES] for start in range(0, len(lines), PDF_LINES)]
    write_pdf(path, pages)
    return len(pages)


def write_corpus(folder: Path, topics: dict[str, str]) -> tuple[dict[str, str], dict[str, int], float]:
    """Each topic a file in folder, in format i % 5; returns file name -> topic, files per format,
    and the corpus's pages."""
    names: dict[str, str] = {}
    per_format = dict.fromkeys(FORMATS, 0)
    pages = 0.0
    for number, (topic, text) in enumerate(sorted(topics.items())):
        suffix = FORMATS[number % len(FORMATS)]
        path = folder / f"topic{number:03}{suffix}"
        if suffix == ".txt":
            path.write_text(text, encoding="utf-8")
        elif suffix == ".md":
            write_markdown(path, blocks(text))
        elif suffix == ".html":
            write_html(path, blocks(text))
        elif suffix == ".docx":
            write_docx(path, blocks(text))
        if suffix == ".pdf":
            pages += write_pdf_topic(path, text)
        else:
            pages += len(text) / PAGE_CHARS
        names[path.name] = topic
        per_format[suffix] += 1
    return names, per_format, pages


def check_answers(questions, topics: dict[str, str]) -> list[str]:
    """Where a question's named topics are not exactly the topics that hold its phrase (runs of
    white space read as one space)."""
    problems = []
    texts = {name: " ".join(text.split()) for name, text in topics.items()}
    for question in questions:
        evidence = " ".join(question.evidence.split())
        holding = {name for name, text in texts.items() if evidence in text}
        if set(question.topics) != holding:
            problems.append(f"{question.text!r}: names {sorted(question.topics)}, phrase in {sorted(holding)}")
    return problems


def rank_of_answer(sources: list[str], answers: set[str]) -> int | None:
    """The 1-based rank of the first hit from an answering file, None when none of them is."""
    return next((rank for rank, source in enumerate(sources, start=1) if source in answers), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="where the default embedding model is converted "
                        "(default: Hearth's embedding-model cache)")
    parser.add_argument("--topics", type=int, help="index only the first N topics by name, and ask only the "
                        "questions one of them answers (default: all)")
    parser.add_argument("--keep", type=Path, help="write the corpus and the index here and leave them "
                        "(default: a temporary folder)")
    args = parser.parse_args()

    from pydoc_data.topics import topics as all_topics

    from docs_recall_questions import QUESTIONS

    from app.documents.index import DocumentIndex
    from app.documents.indexing import index_paths
    from app.documents.search import DocumentSearch
    from app.engine.embedding.default_model import MODEL_NAME, default_embedding_model
    from app.engine.llama.embedder import LlamaEmbedder

    questions = [question for question in QUESTIONS if all(topic in all_topics for topic in question.topics)]
    if len(questions) < len(QUESTIONS):
        print(f"{len(QUESTIONS) - len(questions)} questions left out: this Python's pydoc_data lacks their topics")
    problems = check_answers(questions, all_topics)
    for problem in problems:
        print("answer topics differ from the phrase's:", problem)
    topics = {name: all_topics[name] for name in sorted(all_topics)[: args.topics]}
    questions = [question for question in questions if set(question.topics) & set(topics)]

    if args.cache is None:
        from app.owners.paths import embedding_models_dir

        args.cache = embedding_models_dir()
    folder = tempfile.TemporaryDirectory(prefix="hearth-docs-recall-")
    work = args.keep or Path(folder.name)
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for old in corpus.iterdir():
        old.unlink()
    names, per_format, pages = write_corpus(corpus, topics)
    characters = sum(len(text) for text in topics.values())

    started = time.perf_counter()
    embedder = LlamaEmbedder(default_embedding_model(args.cache))
    load_s = time.perf_counter() - started
    index_path = work / "documents.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index_path}{suffix}").unlink(missing_ok=True)
    index = DocumentIndex(index_path)
    started = time.perf_counter()
    report = index_paths(index, "topics", [corpus], embedder)
    index_s = time.perf_counter() - started
    if report.failed:
        for path, reason in report.failed:
            print(f"failed: {path.name} {reason}")

    search = DocumentSearch(index)
    collection = index.collection("topics")
    figures = {"bm25": [], "vector": [], "hybrid": []}
    per_question = []
    embed_s = 0.0
    for question in questions:
        answers = {name for name, topic in names.items() if topic in question.topics}  # file names
        started = time.perf_counter()
        vector = embedder.embed([question.text])[0]
        embed_s += time.perf_counter() - started
        keyword = [Path(hit.source).name for hit in search.search("topics", question.text, None, top=TOP)]
        nearest_ids = search.nearest(collection.id, vector, limit=TOP)
        nearest_chunks = index.chunks(nearest_ids)
        nearest = [Path(nearest_chunks[chunk_id].source).name for chunk_id in nearest_ids if chunk_id in nearest_chunks]
        hybrid = [Path(hit.source).name for hit in search.search("topics", question.text, vector, top=TOP)]
        ranks = {}
        for method, sources in (("bm25", keyword), ("vector", nearest), ("hybrid", hybrid)):
            ranks[method] = rank_of_answer(sources, answers)
            figures[method].append(ranks[method])
        per_question.append({"question": question.text, "answers": list(question.topics), "ranks": ranks,
                             "hits": {method: [names[source] for source in sources]
                                      for method, sources in (("bm25", keyword), ("vector", nearest),
                                                              ("hybrid", hybrid))}})
    stats = index.stats("topics")
    index.close()
    embedder.close()

    count = len(questions)
    recall = {method: sum(rank is not None for rank in ranks) / count for method, ranks in figures.items()}
    mrr = {method: sum(1 / rank for rank in ranks if rank) / count for method, ranks in figures.items()}
    results = {
        "model": MODEL_NAME,
        "python": sys.version.split()[0],
        "topics": len(topics),
        "files_per_format": per_format,
        "characters": characters,
        "pages": round(pages, 1),
        "chunks": report.chunks,
        "files_indexed": report.indexed,
        "files_failed": [[path.name, reason] for path, reason in report.failed],
        "model_load_s": load_s,
        "index_s": index_s,
        "files_per_s": report.indexed / index_s,
        "pages_per_s": pages / index_s,
        "chunks_per_s": report.chunks / index_s,
        "question_embed_ms": embed_s / count * 1000,
        "questions": count,
        "answer_problems": problems,
        "recall_at_5": recall,
        "mrr_at_5": mrr,
        "hybrid_beats_both": recall["hybrid"] > recall["bm25"] and recall["hybrid"] > recall["vector"],
        "only_hybrid_found": sum(1 for q in per_question if q["ranks"]["hybrid"] and not q["ranks"]["bm25"]
                                 and not q["ranks"]["vector"]),
        "hybrid_lost": sum(1 for q in per_question if not q["ranks"]["hybrid"]
                           and (q["ranks"]["bm25"] or q["ranks"]["vector"])),
        "index_stats": {key: value for key, value in vars(stats).items() if isinstance(value, (int, float, str))},
        "per_question": per_question,
    }
    print(json.dumps({k: v for k, v in results.items() if k not in ("per_question", "index_stats")}, indent=1))
    print(f"corpus: {len(topics)} topics in {', '.join(f'{n} {s}' for s, n in per_format.items())}; "
          f"{characters:,} characters, {pages:.0f} pages, {report.chunks} chunks")
    print(f"indexing: {index_s:.1f} s: {pages / index_s:.2f} pages/s, {report.chunks / index_s:.1f} chunks/s "
          f"(model load {load_s:.1f} s apart)")
    print(f"recall@5 over {count} questions: BM25 {recall['bm25']:.0%}, vectors {recall['vector']:.0%}, "
          f"hybrid {recall['hybrid']:.0%} (MRR@5 {mrr['bm25']:.2f} / {mrr['vector']:.2f} / {mrr['hybrid']:.2f}); "
          f"hybrid {'beats' if results['hybrid_beats_both'] else 'does NOT beat'} both")
    out = ROOT / "bench" / "results" / "docs_recall.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if results["hybrid_beats_both"] and not problems and not report.failed else 1


if __name__ == "__main__":
    sys.exit(main())
