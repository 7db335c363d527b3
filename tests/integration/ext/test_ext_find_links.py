"""pip's find-links locations as the extension path reads them: a directory, an HTML page on disk or
served on 127.0.0.1, and the Python an ``--torch VERSION`` build picks from what they list."""

from __future__ import annotations

import http.server
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.ext.run import index_torch_python
from srcbuild.ext.source import find_links_files, pip_find_links

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


def test_a_directory_an_html_file_and_a_served_page_list_the_projects_files(tmp_path: Path, served: str) -> None:
    folder = _folder(tmp_path)
    page = tmp_path / "links.html"
    page.write_text(PAGE)
    refused = f"http://127.0.0.1:{_closed_port()}/links/"
    links = [str(folder), folder.as_uri(), str(page), served, refused, str(tmp_path / "absent")]
    files = find_links_files("torch", links)
    assert files == [
        (WHEEL_310, (folder / WHEEL_310).as_uri()),
        (WHEEL_310, (folder / WHEEL_310).as_uri()),
        (WHEEL_39, (tmp_path / "wheels" / WHEEL_39).as_uri()),  # relative to the page's own place
        (WHEEL_39, f"{served}wheels/{WHEEL_39}"),
    ]  # the refused server and the absent path are passed over, as pip passes them
    assert find_links_files("torch-scatter", [str(folder)]) == [
        ("torch_scatter-2.1.2.tar.gz", (folder / "torch_scatter-2.1.2.tar.gz").as_uri())]


def _pip_environ(tmp_path: Path, **more: str) -> dict[str, str]:
    """pip reading no configuration file, with an index that lists no torch."""
    index = tmp_path / "index"
    index.mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull,
            "PIP_INDEX_URL": index.as_uri(), **more}


def test_pips_find_links_setting_is_read(tmp_path: Path) -> None:
    environ = _pip_environ(tmp_path, PIP_FIND_LINKS=f"{tmp_path}/a  {tmp_path}/b")
    assert pip_find_links(sys.executable, environ) == (f"{tmp_path}/a", f"{tmp_path}/b")
    assert pip_find_links(sys.executable, _pip_environ(tmp_path)) == ()


def test_the_python_of_a_torch_version_is_chosen_among_the_find_links_wheels(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    interpreter = Path(sys.executable).resolve()  # an ELF program, which is what counts as a Python here
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for version in {"3.10", own}:
        (bin_dir / f"python{version}").symlink_to(interpreter)
    folder = _folder(tmp_path)
    environ = {**_pip_environ(tmp_path, PIP_FIND_LINKS=str(folder)), "PATH": str(bin_dir)}
    # the recipe pins 3.8: this machine lacks it; the find-links directory has torch 2.0.1 for 3.10 alone
    assert index_torch_python("2.0.1", "3.8", environ) == "3.10"
    # read nothing there, and the choice is this machine's, not one a wheel exists for
    bare = {**_pip_environ(tmp_path), "PATH": str(bin_dir)}
    assert index_torch_python("2.0.1", "3.8", bare) == own
