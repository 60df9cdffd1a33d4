#!/usr/bin/env python3
"""Checks that README.md and docs/*.md point only at files that exist.

Every relative Markdown link ([text](path), anchors dropped) must name an existing file or folder,
resolved from the document's own folder; every path written in the text as docs/NAME.md must exist
from the repository root. A doc that is moved or folded into another then cannot leave a dead link
behind. Usage: check_doc_links.py [REPO_ROOT] (default: the current directory).
"""
import pathlib
import re
import sys

LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
DOC_PATH = re.compile(r'\bdocs/[A-Za-z0-9_.-]+\.md\b')


def dead_links(root):
    docs = [root / 'README.md'] + sorted((root / 'docs').glob('*.md'))
    for doc in docs:
        text = doc.read_text(encoding='utf-8')
        for target in LINK.findall(text):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target) or target.startswith('#'):
                continue  # a URL or an anchor in the same page
            path = target.split('#', 1)[0]
            if not (doc.parent / path).exists():
                yield f'{doc.relative_to(root)}: link to {target}, which does not exist'
        for path in sorted(set(DOC_PATH.findall(text))):
            if not (root / path).exists():
                yield f'{doc.relative_to(root)}: names {path}, which does not exist'


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '.').resolve()
    problems = list(dead_links(root))
    for problem in problems:
        print(problem)
    checked = 1 + len(list((root / 'docs').glob('*.md')))
    print(f'{checked} documents checked, {len(problems)} dead links')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
