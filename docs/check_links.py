"""Check the internal links of the built documentation site (no network).

Every ``href``/``src`` of every HTML page under the build folder that points into the site must
name a file that exists, and a ``#fragment`` must be an ``id`` of that page. Links with a scheme
(``https:``, ``mailto:``) are not followed. Run after the HTML build::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python docs/check_links.py docs/_build/html

Prints one line per broken link (page, target) and exits 1 when there is any.
"""
from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: folders of the build that hold copies of sources, not pages to check
SKIP_DIRS = ("_sources", "_static", "_images", "_downloads", "_modules")


class _Page(HTMLParser):
    """The ids and the (attribute, link) pairs of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script", "source")):
                self.links.append(value)


def _parse(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser


def broken_links(root: Path) -> list[tuple[Path, str]]:
    """(page, link) of every internal link under ``root`` whose file or fragment is missing."""
    root = root.resolve()
    pages = [p for p in root.rglob("*.html") if not any(part in SKIP_DIRS for part in p.relative_to(root).parts)]
    parsed: dict[Path, _Page] = {}
    bad = []
    for page in pages:
        if page not in parsed:
            parsed[page] = _parse(page)
        for link in parsed[page].links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("data:", "javascript:")):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append((page, link))
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in parsed:
                    parsed[target] = _parse(target)
                if unquote(parts.fragment) not in parsed[target].ids:
                    bad.append((page, link))
    return bad


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "docs/_build/html")
    if not (root / "index.html").is_file():
        print(f"check_links: {root} holds no built site (index.html); build it first", file=sys.stderr)
        return 2
    bad = broken_links(root)
    for page, link in bad:
        print(f"{page.relative_to(root.resolve())}: broken link {link}")
    pages = sum(1 for _ in root.rglob("*.html"))
    print(f"check_links: {len(bad)} broken internal links in {pages} pages")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
