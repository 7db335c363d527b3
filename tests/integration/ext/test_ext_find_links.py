"""pip's find-links locations as the extension path reads them: a directory (a path or a file://
URL), a page served on 127.0.0.1, one refused and one absent (passed over, as pip passes them)."""

from __future__ import annotations

import http.server
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.ext.source import find_links_files, pip_locations

pytestmark = pytest.mark.integration

WHEEL_310 = "torch-2.0.1-cp310-cp310-manylinux1_x86_64.whl"
WHEEL_39 = "torch-2.0.1-cp39-cp39-manylinux1_x86_64.whl"
PAGE = (f'<html><body><a href="wheels/{WHEEL_39}">{WHEEL_39}</a>'
        '<a href="torchvision-0.15.2-cp39-cp39-manylinux1_x86_64.whl">tv</a></body></html>')


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/links/"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the block ends: nothing listens there


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    for name in (WHEEL_310, "torch_scatter-2.1.2.tar.gz", "torchvision-0.15.2-cp310-cp310-manylinux1_x86_64.whl",
                 "notes.txt"):
        (folder / name).write_bytes(b"")
    return folder


def test_a_directory_and_a_served_page_list_their_files(tmp_path: Path, served: str) -> None:
    folder = _folder(tmp_path)
    refused = f"http://127.0.0.1:{_closed_port()}/links/"
    files = find_links_files([str(folder), folder.as_uri(), served, refused, str(tmp_path / "absent")])
    listed = [(f.name, f.as_uri()) for f in sorted(folder.iterdir())]
    assert files == [
        *listed,
        *listed,
        (WHEEL_39, f"{served}wheels/{WHEEL_39}"),  # relative to the page
        ("torchvision-0.15.2-cp39-cp39-manylinux1_x86_64.whl",
         f"{served}torchvision-0.15.2-cp39-cp39-manylinux1_x86_64.whl"),
    ]


def _pip_environ(tmp_path: Path, **more: str) -> dict[str, str]:
    """pip reading no configuration file, with an index that lists no torch."""
    index = tmp_path / "index"
    index.mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull,
            "PIP_INDEX_URL": index.as_uri(), **more}


def test_pips_find_links_setting_is_read(tmp_path: Path) -> None:
    environ = _pip_environ(tmp_path, PIP_FIND_LINKS=f"{tmp_path}/a  {tmp_path}/b")
    assert pip_locations(sys.executable, environ)[1] == (f"{tmp_path}/a", f"{tmp_path}/b")
    assert pip_locations(sys.executable, _pip_environ(tmp_path))[1] == ()
