"""A stand-in for NVIDIA's download site, built from a real CUDA 11.8 home, served on 127.0.0.1.

``build_site(root, cuda_home)`` writes NVIDIA's directory layout under ``root``:

- ``compute/cuda/redist/redistrib_11.8.0.json`` and component archives
  (``cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-11.8.89-archive.tar.xz`` ..., one top directory
  each), made from the home's real nvcc, cuobjdump, headers and libcudart;
- ``compute/cuda/11.8.0/local_installers/cuda_11.8.0_linux.run``: a real self-extracting shell
  archive that honours ``--silent --toolkit --toolkitpath=DIR`` (and refuses ``--driver``), with the
  toolkit as a tar.gz payload after the script;
- ``compute/redist/cudnn/v7.6.5/cudnn-11.8-linux-x64-v7.6.5.32.tgz``: the legacy cuDNN layout
  (``cuda/include/cudnn.h``, ``cuda/lib64/libcudnn.so*``; the library an ELF with SASS for 3.0 to 7.0).

and a data directory (for ``SRCBUILD_TOOLCHAIN_DATA``) recording their URLs and sha256.
``SiteServer`` serves ``root`` with HTTP range requests, counts the bytes it sends per path, can
cut a response off after N bytes and can serve tampered bytes for one path.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.worlds.cuda_home import make_home
from tests.worlds.wheels import fatbin_container, write_elf

NV = "https://developer.download.nvidia.com/"
RUNFILE_PATH = "compute/cuda/11.8.0/local_installers/cuda_11.8.0_linux.run"
CUDNN_PATH = "compute/redist/cudnn/v7.6.5/cudnn-11.8-linux-x64-v7.6.5.32.tgz"
REDIST_DIR = "compute/cuda/redist/"

# A makeself-style installer: the script, then a marker line, then the payload.
RUNFILE_SCRIPT = r"""#!/bin/sh
# CUDA 11.8.0 stand-in installer: --silent --toolkit --toolkitpath=DIR [--tmpdir=DIR] [--override]
silent=0; toolkit=0; path=""; tmp="${TMPDIR:-/tmp}"
for arg in "$@"; do
  case "$arg" in
    --silent) silent=1 ;;
    --toolkit) toolkit=1 ;;
    --toolkitpath=*) path="${arg#--toolkitpath=}" ;;
    --installpath=*) path="${arg#--installpath=}" ;;
    --tmpdir=*) tmp="${arg#--tmpdir=}" ;;
    --override) ;;
    --driver|--samples|--symlink) echo "refused: $arg" >&2; exit 3 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
if [ "$silent" != 1 ] || [ "$toolkit" != 1 ] || [ -z "$path" ]; then
  echo "needs --silent --toolkit --toolkitpath" >&2; exit 2
fi
mkdir -p "$path" "$tmp"
line=$(awk '/^__PAYLOAD__$/ {print NR + 1; exit}' "$0")
tail -n +"$line" "$0" | tar -xzf - -C "$path" || exit 4
echo "$*" > "$path/.installer-args"
echo "Toolkit installed in $path"
exit 0
__PAYLOAD__
"""


def _tar(files: dict[str, Path], top: str, mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode, **({"preset": 0} if mode == "w:xz" else {"compresslevel": 1})) as tar:  # type: ignore[call-overload]
        for name, src in sorted(files.items()):
            tar.add(src, arcname=f"{top}/{name}" if top else name, recursive=True)
    return buffer.getvalue()


def _cudnn_header() -> str:
    return "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n"


@dataclass(frozen=True)
class Site:
    root: Path
    data_dir: Path
    files: dict[str, str]  # path under the site -> sha256


def build_site(root: Path, cuda_home: Path, data_dir: Path) -> Site:
    root.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    def write(path: str, data: bytes) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        files[path] = hashlib.sha256(data).hexdigest()

    home = cuda_home
    libs = {f"lib/{p.name}": p for p in sorted((home / "lib").glob("libcudart.so*"))}
    headers = {f"include/{n}": home / "include" / n for n in ("cuda_runtime.h", "cuda_runtime_api.h", "crt")}
    stubs = _contract_stubs(root / ".libs-src")
    components = {
        "cuda_nvcc": (
            "11.8.89",
            {"bin/nvcc": home / "bin" / "nvcc", "bin/nvcc.profile": home / "bin" / "nvcc.profile"},
        ),
        "cuda_cudart": ("11.8.89", {**libs, **headers}),
        "cuda_cuobjdump": ("11.8.86", {"bin/cuobjdump": home / "bin" / "cuobjdump"}),
        # stand-ins for cccl, cuBLAS, cuSPARSE, ...: the files the complete-home contract asks for
        "cuda_libraries": ("11.8.89", stubs),
    }
    manifest: dict[str, object] = {"release_date": "2022-10-03"}
    rows = []
    for name, (version, members) in components.items():
        top = f"{name}-linux-x86_64-{version}-archive"
        path = f"{name}/linux-x86_64/{top}.tar.xz"
        data = _tar(members, top, "w:xz")
        write(REDIST_DIR + path, data)
        entry = {"relative_path": path, "sha256": files[REDIST_DIR + path], "size": str(len(data))}
        manifest[name] = {"name": name, "version": version, "linux-x86_64": entry}
        rows.append(
            f'  {{ name = "{name}", version = "{version}", path = "{path}", '
            f'sha256 = "{entry["sha256"]}", size = {len(data)} }},'
        )
    write(REDIST_DIR + "redistrib_11.8.0.json", json.dumps(manifest, indent=2).encode())
    (data_dir / "cuda_redist.toml").write_text(
        f'[[redist]]\nversion = "11.8.0"\nbase = "{NV}{REDIST_DIR}"\nmanifest = "redistrib_11.8.0.json"\n'
        'source = "test site"\ncomponents = [\n' + "\n".join(rows) + "\n]\n"
    )

    # the runfile's toolkit holds the complete-home contract too, in its own layout (lib64/)
    payload = _tar(
        {
            "bin/nvcc": home / "bin" / "nvcc",
            "bin/nvcc.profile": home / "bin" / "nvcc.profile",
            "bin/cuobjdump": home / "bin" / "cuobjdump",
            **{name.replace("lib/", "lib64/", 1): path for name, path in {**stubs, **libs}.items()},
            **headers,
        },
        "",
        "w:gz",
    )
    write(RUNFILE_PATH, RUNFILE_SCRIPT.encode() + payload)
    (data_dir / "cuda_runfile.toml").write_text(
        f'[[runfile]]\nversion = "11.8.0"\nurl = "{NV}{RUNFILE_PATH}"\nsha256 = "{files[RUNFILE_PATH]}"\n'
        f'path_flag = "--toolkitpath"\nsize = {(root / RUNFILE_PATH).stat().st_size}\nsource = "test site"\n'
    )

    header = root / ".cudnn-src" / "cudnn.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(_cudnn_header())
    # a shared object carrying SASS for 3.0, 3.5, 5.0-7.0 (cuDNN 7.6.5's own list) for the kernel check
    library = root / ".cudnn-src" / "libcudnn.so.7.6.5"
    write_elf(library, fatbin_container([("sass", sm) for sm in (30, 35, 50, 52, 60, 61, 70)]))
    write(
        CUDNN_PATH,
        _tar({"include/cudnn.h": header, "lib64/libcudnn.so.7.6.5": library}, "cuda", "w:gz"),
    )
    (data_dir / "cudnn_archives.toml").write_text(
        f'[[cudnn]]\nversion = "7.6.5.32"\ncuda = "11.8"\nurl = "{NV}{CUDNN_PATH}"\n'
        f'sha256 = "{files[CUDNN_PATH]}"\nlayout = "legacy"\nsource = "test site"\n'
    )
    return Site(root, data_dir, files)


def _contract_stubs(stub: Path) -> dict[str, Path]:
    make_home(stub, "11.8", skip=("cudart",))
    members = sorted(p for p in stub.rglob("*") if p.is_file() or p.is_symlink())
    return {str(p.relative_to(stub)).replace("lib64/", "lib/", 1): p for p in members}  # NVIDIA's layout


@dataclass
class ServerState:
    root: Path
    sent: dict[str, int] = field(default_factory=dict)  # path -> bytes sent
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    cut_after: dict[str, int] = field(default_factory=dict)  # path -> close after this many bytes (once)
    tampered: set[str] = field(default_factory=set)
    delay: float = 0.0  # seconds per 1 MB sent (to make concurrent downloads overlap)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(http.server.BaseHTTPRequestHandler):
    state: ServerState

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.lstrip("/")
        state = self.state
        with state.lock:
            state.requests.append((path, self.headers.get("Range")))
        file = state.root / path
        if not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        if path in state.tampered:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with state.lock:
            cut = state.cut_after.pop(path, None)
        if cut is not None:
            body = body[:cut]
        step = 1 << 20
        for offset in range(0, len(body), step):
            chunk = body[offset : offset + step]
            self.wfile.write(chunk)
            with state.lock:
                state.sent[path] = state.sent.get(path, 0) + len(chunk)
            if state.delay:
                time.sleep(state.delay)
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True


class SiteServer:
    """``with SiteServer(root) as server: server.url`` serves ``root`` on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.state = ServerState(root)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __enter__(self) -> SiteServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
