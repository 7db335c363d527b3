"""setup.py of the fake torch: reads the variables torch's setup.py reads and behaves like it.

Commands: ``bdist_wheel`` (configure with CMake + Ninja once, build, write the wheel to dist/),
``clean`` (delete the .gitignore globs up to ``# BEGIN NOT-CLEAN-FILES``, like torch), the
``--cmake`` switch (configure again) and ``build --cmake-only`` (configure when build/ has no
CMakeCache.txt yet, then stop: torch's CMAKE_ONLY; an existing tree is not configured again).
Variables: PYTORCH_BUILD_VERSION/PYTORCH_BUILD_NUMBER,
TORCH_CUDA_ARCH_LIST, USE_CUDA, CUDA_HOME, CUDAHOSTCXX/CUDA_HOST_COMPILER, USE_MPI, MAX_JOBS and
every USE_*/BUILD_*/CMAKE_* variable (passed to CMake as -D, like torch >= 1.2).
``FAKE_TORCH_RECORD_ENV=FILE`` records the environment it ran with (the tests compare a build's
with the shell plan's).
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

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, "build")
PASSTHROUGH = ("USE_", "BUILD_", "CMAKE_")


def flag(name, default="0"):
    return os.environ.get(name, default).upper() in ("1", "ON", "YES", "TRUE", "Y")


def version():
    build_version = os.getenv("PYTORCH_BUILD_VERSION")
    if build_version:
        assert os.getenv("PYTORCH_BUILD_NUMBER") is not None
        number = int(os.environ["PYTORCH_BUILD_NUMBER"])
        return build_version + (f".post{number}" if number > 1 else "")
    with open(os.path.join(ROOT, "version.txt")) as f:
        return f.read().strip()


def gencode_flags(arch_list):
    flags = []
    for token in re.split(r"[;\s]+", arch_list.strip()):
        if not token:
            continue
        ptx = token.endswith("+PTX")
        number = token[: -len("+PTX")] if ptx else token
        if not re.fullmatch(r"\d+\.\d+", number):
            sys.exit(f"Unknown CUDA Arch Name {token} in TORCH_CUDA_ARCH_LIST")
        sm = number.replace(".", "")
        flags.append(f"-gencode=arch=compute_{sm},code=sm_{sm}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{sm},code=compute_{sm}")
    return " ".join(flags)


def cuda_version():
    """The CUDA release of $CUDA_HOME's nvcc ("11.8"), as torch records it in torch/version.py."""
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    out = subprocess.run([os.path.join(cuda_home, "bin", "nvcc"), "--version"], capture_output=True, text=True)
    m = re.search(r"release (\d+\.\d+)", out.stdout)
    return m.group(1) if m else None


def run(argv):
    print("+ " + " ".join(argv), flush=True)
    code = subprocess.call(argv, cwd=ROOT)
    if code != 0:
        sys.exit(code)


def configure():
    use_cuda = flag("USE_CUDA", "1")
    defs = {
        "USE_CUDA": "ON" if use_cuda else "OFF",
        "PYTHON_EXECUTABLE": sys.executable,
        "CMAKE_BUILD_TYPE": "Release",
    }
    for name, value in os.environ.items():
        if name.startswith(PASSTHROUGH):
            defs[name] = value
    if use_cuda:
        cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
        arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
        if not arch_list:
            sys.exit("TORCH_CUDA_ARCH_LIST is not set and there is no GPU to detect it from")
        defs["CUDA_HOME"] = cuda_home
        defs["TORCH_NVCC_GENCODE"] = gencode_flags(arch_list)
        host = os.environ.get("CUDA_HOST_COMPILER") or os.environ.get("CUDAHOSTCXX")
        if host:
            defs["CUDA_HOST_COMPILER"] = host
    argv = ["cmake", "-G", "Ninja", "-S", ROOT, "-B", BUILD]
    argv += [f"-D{k}={v}" for k, v in sorted(defs.items())]
    run(argv)


def build():
    if "--cmake-only" in sys.argv:
        if "--cmake" in sys.argv or not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            configure()
        print('Finished running cmake. Run "ccmake build" or "cmake-gui build" to adjust build options.', flush=True)
        return
    if "--cmake" in sys.argv or not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        configure()
    else:
        print("Everything's in place. Do not rerun.", flush=True)
    jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
    run(["cmake", "--build", BUILD, "--", "-j", jobs])
    lib_dir = os.path.join(ROOT, "torch", "lib")
    os.makedirs(lib_dir, exist_ok=True)
    for name in ("libtorch_cpu.so", "libtorch_cuda.so", "libtorch_python.so"):
        path = os.path.join(BUILD, name)
        if os.path.exists(path):
            shutil.copy2(path, os.path.join(lib_dir, name))
    cuda = cuda_version() if flag("USE_CUDA", "1") else None
    with open(os.path.join(ROOT, "torch", "version.py"), "w") as f:
        f.write(f"__version__ = {version()!r}\ncuda = {cuda!r}\n")


def write_wheel():
    ver = version()
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    name = f"torch-{ver}-{py}-{py}-{plat}.whl"
    dist_info = f"torch-{ver}.dist-info"
    os.makedirs(os.path.join(ROOT, "dist"), exist_ok=True)
    path = os.path.join(ROOT, "dist", name)
    files = {}
    for dirpath, dirs, names in os.walk(os.path.join(ROOT, "torch")):
        dirs[:] = [d for d in dirs if d != "csrc"]  # sources, as torch's wheel leaves them out
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            full = os.path.join(dirpath, n)
            with open(full, "rb") as f:
                files[os.path.relpath(full, ROOT)] = f.read()
    files[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: torch\nVersion: {ver}\n".encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: fake-torch\nRoot-Is-Purelib: false\nTag: {py}-{py}-{plat}\n"
    ).encode()
    record = []
    for arc, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files.items():
            zf.writestr(arc, data)
    print(f"creating '{os.path.relpath(path, ROOT)}'", flush=True)


def clean():
    with open(os.path.join(ROOT, ".gitignore")) as f:
        for line in f:
            line = line.strip()
            if line == "# BEGIN NOT-CLEAN-FILES":
                break
            if not line or line.startswith("#"):
                continue
            for found in glob.glob(os.path.join(ROOT, line.rstrip("/"))):
                print(f"removing '{os.path.relpath(found, ROOT)}'", flush=True)
                if os.path.isdir(found) and not os.path.islink(found):
                    shutil.rmtree(found)
                else:
                    os.remove(found)


def record_environment():
    """``FAKE_TORCH_RECORD_ENV=FILE``: write the environment this setup.py runs with, as JSON."""
    path = os.environ.get("FAKE_TORCH_RECORD_ENV")
    if path:
        import json

        with open(path, "w", encoding="utf-8") as f:
            json.dump({"cwd": os.getcwd(), "environ": dict(os.environ)}, f, indent=1, sort_keys=True)


def main():
    record_environment()
    commands = [a for a in sys.argv[1:] if not a.startswith("-")]
    if not commands:
        sys.exit("usage: setup.py [clean] [bdist_wheel] [--cmake]")
    for command in commands:
        if command == "clean":
            clean()
        elif command in ("bdist_wheel", "build", "develop", "install"):
            build()
            if "--cmake-only" in sys.argv:
                return
            if command == "bdist_wheel":
                write_wheel()
        else:
            sys.exit(f"error: invalid command '{command}'")


if __name__ == "__main__":
    main()
