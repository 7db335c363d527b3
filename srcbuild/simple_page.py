"""Reading a package index's simple page (PEP 503 HTML or PEP 691 JSON): the files it lists.

A leaf: extension builds (``ext.source``) and ``knowledge refresh`` (``factscan.index``) read pages
with it, neither importing the other.
"""

from __future__ import annotations

import html.parser
import json
import urllib.parse
from typing import Any


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(value for key, value in attrs if key == "href" and value)


def page_files(page_url: str, body: str, content_type: str) -> list[tuple[str, str]]:
    """(file name, URL with its #sha256= fragment) of every file a simple page lists."""
    if "json" in content_type:
        data: dict[str, Any] = json.loads(body)
        files = []
        for f in data.get("files", []):
            digest = (f.get("hashes") or {}).get("sha256")
            url = urllib.parse.urljoin(page_url, f.get("url", ""))
            files.append((f.get("filename", ""), f"{url.split('#')[0]}#sha256={digest}" if digest else url))
        return files
    parser = _Links()
    parser.feed(body)
    out = []
    for href in parser.hrefs:
        url = urllib.parse.urljoin(page_url, href)
        name = urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1]
        out.append((name, url))
    return out
