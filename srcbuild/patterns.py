"""Regular expressions compiled when first matched, not when their module is imported.

A short command imports modules whose patterns it never matches: the parsers of every tool's
output (for the few tools a machine has), the checks of recipe keys a recipe does not use. On
Python 3.11 ``re`` compiles in Python, about half a million instructions a pattern, and
``srcbuild doctor`` imported about fifty patterns to match some twenty. ``LazyPattern`` holds the
pattern and has the methods of ``re.Pattern`` srcbuild calls, each compiling it the first time.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any


class LazyPattern:
    """``re.compile(pattern, flags)``, done on the first match."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"
