"""setup.py of the fake torchaudio: builds against the installed (fake) torch, like audio does.

It imports torch first (torchaudio's setup.py does), reads BUILD_VERSION, PYTORCH_VERSION (the
torch pin of the wheel) and the switches of audio's tools/setup_helpers/extension.py: USE_CUDA
(default: whether torch was built with CUDA), BUILD_SOX and USE_FFMPEG (default on). BUILD_SOX
on stops the build, as the real one stops without a network: its CMake downloads libsox's
sources. It compiles ``torchaudio/_torchaudio.so`` with $CC and, with USE_CUDA on,
``torchaudio/lib/libtorchaudio.so`` with nvcc for TORCH_CUDA_ARCH_LIST, and writes
``dist/torchaudio-<version>-cpXY-cpXY-<platform>.whl``. ``clean`` deletes the .gitignore globs.
``FAKE_AUDIO_FAIL=1`` makes the build fail (a test's failed run, resumed after).
"""

import base64
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import torch

ROOT = os.path.dirname(os.path.abspath(__file__))
TRUES = ("1", "true", "TRUE", "on", "ON", "yes", "YES")


def run(argv):
    print("+ " + " ".join(argv), flush=True)
    code = subprocess.call(argv, cwd=ROOT)
    if code != 0:
        sys.exit(code)


def get_build(var, default):
    """audio's _get_build: the variable's truth value, ``default`` when it is not set."""
    return os.environ[var] in TRUES if var in os.environ else default


def version():
    if os.getenv("BUILD_VERSION"):
        return os.environ["BUILD_VERSION"]
    with open(os.path.join(ROOT, "version.txt")) as f:
        return f.read().strip()


def gencode_flags(arch_list):
    flags = []
    for token in re.split(r"[;\s]+", arch_list.strip()):
        if not token:
            continue
        ptx = token.endswith("+PTX")
        sm = (token[:-4] if ptx else token).replace(".", "")
        flags.append(f"-gencode=arch=compute_{sm},code=sm_{sm}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{sm},code=compute_{sm}")
    return flags


def build():
    print(f"Building against torch {torch.__version__}", flush=True)
    if os.environ.get("FAKE_AUDIO_FAIL") == "1":
        sys.exit("error: FAKE_AUDIO_FAIL=1: this build fails")
    if get_build("BUILD_SOX", True):
        sys.exit("error: BUILD_SOX: downloading libsox's sources failed (no network in the fixture world)")
    if get_build("USE_FFMPEG", True):
        sys.exit("error: USE_FFMPEG: no FFmpeg libraries found")
    cc = os.environ.get("CC", "cc")
    pkg = os.path.join(ROOT, "torchaudio")
    cpu = os.path.join(ROOT, "csrc", "lfilter.c")
    run([cc, "-shared", "-fPIC", "-O2", "-o", os.path.join(pkg, "_torchaudio.so"), cpu])
    if get_build("USE_CUDA", torch.version.cuda is not None):
        cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        argv = [os.path.join(cuda_home, "bin", "nvcc")]
        if os.environ.get("CUDAHOSTCXX"):
            argv += ["-ccbin", os.environ["CUDAHOSTCXX"]]
        argv += gencode_flags(os.environ.get("TORCH_CUDA_ARCH_LIST", ""))
        argv += ["-shared", "-Xcompiler", "-fPIC", "-cudadevrt", "none", "-cudart", "shared"]
        argv += ["-o", os.path.join(pkg, "lib", "libtorchaudio.so"), os.path.join(ROOT, "csrc", "rnnt_kernel.cu")]
        run(argv)
    with open(os.path.join(pkg, "version.py"), "w") as f:
        f.write(f"__version__ = {version()!r}\ntorch_version = {torch.__version__!r}\n")


def write_wheel():
    ver = version()
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    dist_info = f"torchaudio-{ver}.dist-info"
    files = {}
    for dirpath, _, names in os.walk(os.path.join(ROOT, "torchaudio")):
        for n in sorted(names):
            if not n.endswith(".pyc"):
                full = os.path.join(dirpath, n)
                with open(full, "rb") as f:
                    files[os.path.relpath(full, ROOT)] = f.read()
    meta = f"Metadata-Version: 2.1\nName: torchaudio\nVersion: {ver}\n"
    if os.getenv("PYTORCH_VERSION"):
        meta += f"Requires-Dist: torch=={os.environ['PYTORCH_VERSION']}\n"
    files[f"{dist_info}/METADATA"] = meta.encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: fake-audio\nRoot-Is-Purelib: false\nTag: {py}-{py}-{plat}\n"
    ).encode()
    record = []
    for arc, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(os.path.join(ROOT, "dist"), exist_ok=True)
    path = os.path.join(ROOT, "dist", f"torchaudio-{ver}-{py}-{py}-{plat}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files.items():
            zf.writestr(arc, data)
    print(f"creating '{os.path.relpath(path, ROOT)}'", flush=True)


def clean():
    with open(os.path.join(ROOT, ".gitignore")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            for found in glob.glob(os.path.join(ROOT, line.rstrip("/"))):
                if os.path.isdir(found):
                    shutil.rmtree(found)
                else:
                    os.remove(found)


def main():
    for command in [a for a in sys.argv[1:] if not a.startswith("-")]:
        if command == "clean":
            clean()
        elif command == "bdist_wheel":
            build()
            write_wheel()
        else:
            sys.exit(f"error: invalid command '{command}'")


if __name__ == "__main__":
    main()
