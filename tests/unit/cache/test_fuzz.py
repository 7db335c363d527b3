"""Fuzzing what remotes and wheels hand srcbuild: manifests, index pages, fat binaries.

Whatever the bytes, the parsers either return data or raise a ``SrcbuildError`` (a clean message
and exit code): never another exception, which would be exit 70. CI runs a fixed budget with a
fixed seed (``derandomize``), a few seconds; a longer, random run is one command away::

    SRCBUILD_FUZZ_EXAMPLES=20000 python -m pytest -q tests/unit/cache/test_fuzz.py

(a long run draws new inputs each time; ``SRCBUILD_FUZZ_SEED=random`` does so at the CI budget).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes.http import HttpIndexRemote, parse_links
from srcbuild.errors import SrcbuildError
from srcbuild.verify.fatbin import scan_elf
from tests.unit.cache.synthetic import make_manifest, make_wheel
from tests.worlds.wheels import fatbin_container, write_elf

LONG = int(os.environ.get("SRCBUILD_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=LONG or 150,
    derandomize=not LONG and os.environ.get("SRCBUILD_FUZZ_SEED", "") != "random",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)

_REAL: dict[str, object] = {}


def real_manifest() -> dict[str, object]:
    if not _REAL:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            _REAL.update(make_manifest(make_wheel(Path(tmp))).to_json())
    return dict(_REAL)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
FIELDS = ["package", "version", "wheel", "sha256", "fingerprint", "size", "kernels", "key_inputs", "resolved",
          "recipe", "toolchain", "created", "entry_key", "extra", "local_version"]  # fmt: skip


def only_clean_errors(func: object, *args: object) -> object:
    try:
        return func(*args)  # type: ignore[operator]
    except SrcbuildError:
        return None


@FUZZ
@given(st.binary(max_size=2048))
def test_manifest_bytes(data: bytes) -> None:
    only_clean_errors(Manifest.loads, data, "fuzz")


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6), st.integers(0, 700))
def test_manifest_fields(changes: dict[str, object], depth: int) -> None:
    data = real_manifest()
    data.update(changes)
    only_clean_errors(Manifest.loads, json.dumps(data), "fuzz")
    nested = "[" * depth + "]" * depth  # arrays nested deeper than the JSON parser's recursion
    only_clean_errors(Manifest.loads, json.dumps(data)[:-1] + f', "x": {nested}}}', "fuzz")


page_parts = st.sampled_from(
    ["<a href='", "'>", "</a>", "<a ", "href=", "data-srcbuild-fingerprint=", "#sha256=", "../", "file:///",
     "http://[::1", "%00", "\x00", "<!--", "<![CDATA[", "&#xffffffff;", "<", ">", '"', "'", "x" * 64]
)  # fmt: skip


@FUZZ
@given(st.lists(page_parts | st.text(max_size=20), max_size=40), st.binary(max_size=64))
def test_index_pages(parts: list[str], noise: bytes) -> None:
    page = "".join(parts).encode("utf-8", errors="surrogatepass") + noise
    only_clean_errors(parse_links, page, "fuzz")

    remote = HttpIndexRemote("http://127.0.0.1:1/")
    fp = str(real_manifest()["fingerprint"])
    manifest_text = json.dumps(real_manifest()).encode()

    def get(url: str, what: str, limit: int = 0) -> bytes:  # the pages a hostile server would send
        if url.endswith(".manifest.json"):
            return manifest_text
        if url.endswith("/simple/"):
            return b"<a href='torch/'>torch</a>" + page
        return page + f"<a href='../../files/x.whl' data-srcbuild-fingerprint='{fp}'>x</a>".encode()

    remote._get = get  # type: ignore[method-assign]
    only_clean_errors(remote.manifests, None)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 600), st.integers(0, 255)), min_size=1, max_size=12), st.integers(0, 4096))
def test_fat_binaries(flips: list[tuple[int, int]], cut: int) -> None:
    buf = io.BytesIO()
    base = _elf()
    data = bytearray(base)
    for at, value in flips:
        data[(at * 7) % len(data)] = value
    buf.write(bytes(data[: len(data) - cut % len(data)] if cut % 3 == 0 else data))
    buf.seek(0)
    only_clean_errors(scan_elf, buf)


_ELF: list[bytes] = []


def _elf() -> bytes:
    if not _ELF:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "lib.so"
            write_elf(path, fatbin_container([("sass", 35), ("ptx", 35), ("sass", 50)]), needed=["libcudart.so.11.0"])
            _ELF.append(path.read_bytes())
    return _ELF[0]
