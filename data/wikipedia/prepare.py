"""
Out-of-domain evaluation text: English Wikipedia articles, from the test data that ships inside the
gensim 4.4.0 wheel (a shortened 2016 enwiki dump: 206 pages, of which 106 are real articles and the
rest redirects). The wheel is fetched with pip at prepare time into data/cache/; the text is CC BY-SA,
so it is never committed. Writes val.bin only: this corpus is for evaluation, not training.

    python data/wikipedia/prepare.py            # -> data/wikipedia/val.bin, meta.json
    python data/wikipedia/prepare.py --tokenizer=bytes   # -> data/wikipedia_bytes/

Each article becomes one document: its title, a blank line, then its plain text with the wiki markup
stripped (strip_wiki_markup below) and the reference-list sections dropped.
"""

import bz2
import html
import io
import re
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: `from data.text import`

from configurator import configure, one_line_errors
from data.fetch import CACHE_DIR, GENSIM_WHEEL, pip_archive, read_members
from data.text import corpus_dir, write_corpus

DUMP_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
# sections that are lists of citations or links, not prose
SKIPPED_SECTIONS = {"references", "external links", "see also", "further reading", "notes", "bibliography",
                    "sources", "citations", "footnotes", "notes and references", "works cited"}

# -----------------------------------------------------------------------------
# default config
out_dir = ""                # '' = data/wikipedia, or data/wikipedia_bytes with --tokenizer=bytes
cache_dir = str(CACHE_DIR)  # where the gensim wheel is fetched to (kept: a second prepare needs no network)
tokenizer = "gpt2"          # 'gpt2' (BPE) or 'bytes'
overwrite = False           # True: replace another corpus in out_dir (a checkpoint trained on it loses its tokens)

# -----------------------------------------------------------------------------
# wiki markup -> plain text

# whole elements whose content is not prose
DROPPED_ELEMENTS = re.compile(r"<(ref|math|gallery|timeline|score|source|syntaxhighlight|imagemap|chem)\b[^>]*>"
                              r".*?</\1\s*>", re.S | re.I)
SELF_CLOSING_REF = re.compile(r"<ref\b[^>]*/>", re.I)
COMMENT = re.compile(r"<!--.*?(-->|$)", re.S)
HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")
INNER_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
EXTERNAL_LINK = re.compile(r"\[(?:https?:|ftp:)?//[^\s\]]*\s*([^\]]*)\]")
NON_TEXT_NAMESPACE = re.compile(r"\s*(file|image|category|media)\s*:|\s*[a-z]{2,3}(-[a-z]+)?:", re.I)  # use .match
EMPHASIS = re.compile(r"'{2,5}")  # ''italic'', '''bold''', '''''both'''''
MAGIC_WORD = re.compile(r"__[A-Z]+__")
EMPTY_BRACKETS = re.compile(r"\(\s*[,;:]?\s*\)")  # what '({{IPA|...}})' leaves behind


def remove_nested(text, opener, closer, only=None):
    """Remove balanced opener...closer spans, nested ones included ({{templates}}, {| tables |}).
    With `only` (a regex), remove only the outermost spans whose content starts with a match."""
    pieces, depth, kept_from, span_start, removable = [], 0, 0, 0, False
    for match in re.finditer(re.escape(opener) + "|" + re.escape(closer), text):
        if match.group() == opener:
            if depth == 0:
                span_start, removable = match.start(), only is None or bool(only.match(text, match.end()))
            depth += 1
        elif depth > 0:  # a stray closer outside any span is left as text
            depth -= 1
            if depth == 0 and removable:
                pieces.append(text[kept_from:span_start])
                kept_from = match.end()
    if depth > 0 and removable:  # unclosed at the end of the article: drop the rest
        pieces.append(text[kept_from:span_start])
        kept_from = len(text)
    return "".join(pieces) + text[kept_from:]


def link_text(match):
    """[[target|label]] -> label, [[target]] -> target; files, categories, interlanguage links -> ''."""
    target, _, label = match.group(1).partition("|")
    if NON_TEXT_NAMESPACE.match(target):
        return ""
    return (label or target).lstrip(":")


def drop_sections(text, skipped=SKIPPED_SECTIONS):
    """Drop every section whose heading is in `skipped`, up to the next heading of the same or higher level."""
    kept, skip_level = [], None
    for line in text.split("\n"):
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if skip_level is not None and level <= skip_level:
                skip_level = None
            if skip_level is None and heading.group(2).strip().lower() in skipped:
                skip_level = level
        if skip_level is None:
            kept.append(line)
    return "\n".join(kept)


def strip_wiki_markup(wikitext):
    """MediaWiki source of an article -> plain prose, paragraphs separated by blank lines."""
    text = COMMENT.sub("", wikitext)
    text = drop_sections(text)
    text = DROPPED_ELEMENTS.sub("", SELF_CLOSING_REF.sub("", text))
    text = remove_nested(text, "{{", "}}")  # templates: infoboxes, citations, navboxes
    text = remove_nested(text, "{|", "|}")  # tables
    text = remove_nested(text, "[[", "]]", only=NON_TEXT_NAMESPACE)  # images with captions, categories
    while INNER_LINK.search(text):  # innermost first
        text = INNER_LINK.sub(link_text, text)
    text = EXTERNAL_LINK.sub(r"\1", text)
    text = HTML_TAG.sub("", text)
    text = EMPHASIS.sub("", MAGIC_WORD.sub("", text))
    text = html.unescape(text).replace("\u00a0", " ")
    lines = []
    for line in text.split("\n"):
        heading = HEADING.match(line)
        if heading:
            line = heading.group(2)
        if re.match(r"\{\||\|\}|\|-", line):
            continue  # what is left of a table that a template opened or closed
        line = re.sub(r"^[*#:;]+\s*", "", line)  # list bullets and indentation
        line = re.sub(r"[ \t]+", " ", EMPTY_BRACKETS.sub("", line)).strip()
        lines.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# -----------------------------------------------------------------------------
# reading the dump

def read_articles(dump_file):
    """Yield (title, wikitext) of the real articles of a MediaWiki XML dump: main namespace, no redirects."""
    for _, element in ElementTree.iterparse(dump_file):
        if not element.tag.endswith("}page"):
            continue
        fields = {child.tag.rsplit("}", 1)[-1]: child for child in element.iter()}
        wikitext = (fields["text"].text or "") if "text" in fields else ""
        is_redirect = "redirect" in fields or wikitext.lstrip()[:9].upper() == "#REDIRECT"
        if fields["ns"].text == "0" and not is_redirect:
            yield fields["title"].text, wikitext
        element.clear()


if __name__ == "__main__":  # imported (tests/test_data.py), it only defines the markup stripper
    one_line_errors("data/wikipedia/prepare.py")
    configure(globals(), sys.argv[1:])
    started = time.time()
    compressed = read_members(pip_archive(*GENSIM_WHEEL, cache_dir), {DUMP_MEMBER: None})[DUMP_MEMBER]
    dump = io.BytesIO(bz2.decompress(compressed))
    articles = [f"{title}\n\n{strip_wiki_markup(wikitext)}" for title, wikitext in read_articles(dump)]
    print(f"{len(articles)} articles ({sum(map(len, articles)):,} characters of plain text)")
    write_corpus(out_dir or corpus_dir(Path(__file__).resolve().parent, tokenizer), [], articles,
                 source=f"English Wikipedia (CC BY-SA), {len(articles)} articles from the {GENSIM_WHEEL[0]} wheel's "
                        f"{DUMP_MEMBER.rsplit('/', 1)[-1]}", tokenizer=tokenizer, overwrite=overwrite)
    print(f"done in {time.time() - started:.1f}s")
