"""Every relative link in README.md, docs/**/*.md and the folders' READMEs
resolves: the file or directory exists, and a #anchor names a heading (or an
<a id/name>) of the Markdown file it points into, by GitHub's rules for
heading anchors. Links to other sites are not followed. A source path named in
code (`src/...`, `include/...`, `train/...`, `eval/...`, `tests/...`,
`harness/...`, `scripts/...`, without placeholders) exists too, so a moved
file is caught. Prints one line per broken link and exits 1, or one line with
the count. Run from the repository root:
/usr/bin/python3 -m tests.house.doc_links [FILE.md ...]"""
import glob
import os
import re
import sys
import unicodedata
from urllib.parse import unquote

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*?(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
# [text](target "title") and ![alt](target): the target up to a space or the closing parenthesis,
# or <target> in angle brackets.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SOURCE_PATH = re.compile(r"^(?:src|include|train|eval|tests|harness|scripts)/[A-Za-z0-9_./-]*$")


def slug(heading):
    """GitHub's anchor for a heading's text: the text as rendered (code
    spans' contents, links' text, no emphasis marks), lower case, every
    character that is not a letter, digit, space, hyphen or underscore
    removed, each space a hyphen."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis marks, not snake_case's underscores
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat == "Mn":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def strip_code(line):
    """The line with its code spans blanked (a link inside one is not a link)."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def scan(path):
    """(anchors, links, paths) of a Markdown file: the set of its anchors,
    (line number, target) for each link outside code, and (line number,
    path) for each source path named in a code span."""
    anchors, links, paths, seen = set(), [], [], {}
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if fence:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            h = HEADING.match(line)
            if h:
                base = slug(h.group(2))
                k = seen.get(base, 0)
                anchors.add(base if k == 0 else f"{base}-{k}")  # repeats: -1, -2, ...
                seen[base] = k + 1
            anchors.update(a for a in HTML_ANCHOR.findall(line))
            paths += [(n, m.group(2).strip()) for m in CODE_SPAN.finditer(line)
                      if SOURCE_PATH.match(m.group(2).strip()) and "..." not in m.group(2)]
            text = strip_code(line)
            for m in INLINE.finditer(text):
                links.append((n, m.group(1).strip("<>")))
            m = REFERENCE.match(text)
            if m:
                links.append((n, m.group(1)))
    return anchors, links, paths


def check(files, root="."):
    """The broken links and source paths of files as 'file:line: target: why', and how many were checked."""
    anchors_of, broken, count = {}, [], 0

    def anchors(path):
        if path not in anchors_of:
            anchors_of[path] = scan(path)[0]
        return anchors_of[path]

    for path in files:
        _, links, paths = scan(path)
        for n, name in paths:
            count += 1
            if not os.path.exists(os.path.join(root, name)):
                broken.append(f"{os.path.relpath(path, root)}:{n}: `{name}`: no such file or directory")
        for n, target in links:
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
                continue
            count += 1
            where, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), unquote(where))) if where else path
            rel = os.path.relpath(path, root)
            if not os.path.exists(dest):
                broken.append(f"{rel}:{n}: {target}: no such file or directory")
            elif anchor and dest.endswith(".md") and os.path.isfile(dest) and unquote(anchor) not in anchors(dest):
                broken.append(f"{rel}:{n}: {target}: no heading or anchor '#{anchor}' in {os.path.relpath(dest, root)}")
    return broken, count


def self_check():
    """The anchor rules against anchors GitHub gives these headings."""
    cases = {"C against PyTorch (`make bench`)": "c-against-pytorch-make-bench",
             "`make probe` — synthetic recall probes": "make-probe--synthetic-recall-probes",
             "`bin/train` — train, resume, fine-tune, dump gradients": "bintrain--train-resume-fine-tune-dump-gradients",
             "Threads, and a busy machine": "threads-and-a-busy-machine",
             "An example: the demo's two models": "an-example-the-demos-two-models",
             "The house: *emphasis* and snake_case": "the-house-emphasis-and-snake_case",
             "At GPT-2 small's size": "at-gpt-2-smalls-size"}
    return [f"slug({h!r}) = {slug(h)!r}, GitHub's is {want!r}" for h, want in cases.items() if slug(h) != want]


def main():
    files = sys.argv[1:] or sorted(dict.fromkeys(["README.md"] + glob.glob("docs/**/*.md", recursive=True)
                                                 + glob.glob("*/README.md") + glob.glob("*/*/README.md")
                                                 + glob.glob("*/*/*/README.md")))
    problems = self_check()
    broken, count = check(files)
    for line in problems + broken:
        print(line)
    if problems or broken:
        print(f"doc links: {len(broken)} of {count} links and source paths in {len(files)} files broken"
              + (f", {len(problems)} anchor rules wrong" if problems else ""))
        sys.exit(1)
    print(f"doc links: {count} links and source paths in {len(files)} files, every one resolves")


if __name__ == "__main__":
    main()
