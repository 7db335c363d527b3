"""A torch-shaped world of local bare git repositories, for tests and benchmarks.

``make_world(root)`` writes, under ``root/<owner>/<name>.git``, a top repository standing in for
``pytorch/pytorch`` with annotated tags (``v1.0.0``, ``v1.1.0``, ``v2.0.0`` by default) and, at
every tag, 36 submodules laid out like PyTorch's ``.gitmodules`` (pytorch/pytorch:.gitmodules@000ad139,
research notes torch-build.md §4a): URLs on ``https://github.com/...``, some without ``.git``,
flatbuffers as ``git@github.com:google/flatbuffers.git``, NNPACK's dependencies with names that
differ from their paths, and nested submodules (fbgemm -> asmjit/cpuinfo, tensorpipe ->
libuv/pybind11, onnx -> benchmark). Nothing resolves without a mirror rule: ``World.mirror_rule``
(``https://github.com/=file://<root>/``) maps GitHub onto ``root``.

Repositories are written with ``git fast-import`` (fast, deterministic: the same arguments give
the same commit ids). Every repository gets ``commits`` commits per tag, each rewriting two files
with ``size`` bytes of fresh hex text, so the history outweighs one checkout as it does upstream.
Two submodules in three move at each tag; the rest stay pinned at their first tag's commit.
``project_files[tag]`` puts files (setup.py, sources) into the top repository at that tag; they stay
in later tags until a later tag's files overwrite them. ``make_project`` writes a plain tagged
repository without submodules (a torchvision stand-in). ``isolated_git_env()`` is the environment
to run git in: no user or system config, a fixed identity, no credential prompts.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TOP = "https://github.com/pytorch/pytorch"
DEFAULT_TAGS = ("v1.0.0", "v1.1.0", "v2.0.0")
NNPACK_DEPS = ("pthreadpool", "FXdiv", "FP16", "psimd")

# (path, url) in the order make_world takes them; the interesting shapes come first so that
# small worlds still have nesting, an SSH URL and URLs without ".git".
SUBMODULES: tuple[tuple[str, str], ...] = (
    ("third_party/pybind11", "https://github.com/pybind/pybind11.git"),
    ("third_party/fbgemm", "https://github.com/pytorch/fbgemm"),
    ("third_party/tensorpipe", "https://github.com/pytorch/tensorpipe.git"),
    ("third_party/flatbuffers", "git@github.com:google/flatbuffers.git"),
    ("third_party/gloo", "https://github.com/facebookincubator/gloo"),
    ("third_party/onnx", "https://github.com/onnx/onnx.git"),
    ("third_party/pthreadpool", "https://github.com/Maratyszcza/pthreadpool.git"),
    ("third_party/cub", "https://github.com/NVlabs/cub.git"),
    ("third_party/eigen", "https://github.com/eigenteam/eigen-git-mirror.git"),
    ("third_party/googletest", "https://github.com/google/googletest.git"),
    ("third_party/benchmark", "https://github.com/google/benchmark.git"),
    ("third_party/protobuf", "https://github.com/protocolbuffers/protobuf.git"),
    ("third_party/ios-cmake", "https://github.com/Yangqing/ios-cmake.git"),
    ("third_party/NNPACK", "https://github.com/Maratyszcza/NNPACK.git"),
    ("third_party/FXdiv", "https://github.com/Maratyszcza/FXdiv.git"),
    ("third_party/FP16", "https://github.com/Maratyszcza/FP16.git"),
    ("third_party/psimd", "https://github.com/Maratyszcza/psimd.git"),
    ("third_party/zstd", "https://github.com/facebook/zstd.git"),
    ("third_party/cpuinfo", "https://github.com/pytorch/cpuinfo.git"),
    ("third_party/python-enum", "https://github.com/PeachPy/enum34.git"),
    ("third_party/python-peachpy", "https://github.com/Maratyszcza/PeachPy.git"),
    ("third_party/python-six", "https://github.com/benjaminp/six.git"),
    ("third_party/onnx-tensorrt", "https://github.com/onnx/onnx-tensorrt"),
    ("third_party/sleef", "https://github.com/shibatch/sleef"),
    ("third_party/ideep", "https://github.com/intel/ideep"),
    ("third_party/nccl/nccl", "https://github.com/NVIDIA/nccl"),
    ("third_party/gemmlowp/gemmlowp", "https://github.com/google/gemmlowp.git"),
    ("third_party/QNNPACK", "https://github.com/pytorch/QNNPACK"),
    ("third_party/neon2sse", "https://github.com/intel/ARM_NEON_2_x86_SSE.git"),
    ("third_party/foxi", "https://github.com/houseroad/foxi.git"),
    ("third_party/tbb", "https://github.com/01org/tbb"),
    ("android/libs/fbjni", "https://github.com/facebookincubator/fbjni.git"),
    ("third_party/XNNPACK", "https://github.com/google/XNNPACK.git"),
    ("third_party/fmt", "https://github.com/fmtlib/fmt.git"),
    ("third_party/cudnn_frontend", "https://github.com/NVIDIA/cudnn-frontend.git"),
    ("third_party/kineto", "https://github.com/pytorch/kineto"),
    ("third_party/pocketfft", "https://github.com/mreineck/pocketfft"),
    ("third_party/breakpad", "https://github.com/driazati/breakpad.git"),
)

NESTED: Mapping[str, tuple[tuple[str, str], ...]] = {
    "pytorch/fbgemm": (
        ("third_party/asmjit", "https://github.com/asmjit/asmjit.git"),
        ("third_party/cpuinfo", "https://github.com/pytorch/cpuinfo"),
    ),
    "pytorch/tensorpipe": (
        ("third_party/libuv", "https://github.com/libuv/libuv.git"),
        ("third_party/pybind11", "https://github.com/pybind/pybind11.git"),
    ),
    "onnx/onnx": (("third_party/benchmark", "https://github.com/google/benchmark.git"),),
}

ISOLATED_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "srcbuild world",
    "GIT_AUTHOR_EMAIL": "world@example.invalid",
    "GIT_COMMITTER_NAME": "srcbuild world",
    "GIT_COMMITTER_EMAIL": "world@example.invalid",
}


def isolated_git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with git cut off from user and system config."""
    env = dict(os.environ if base is None else base)
    env.update(ISOLATED_GIT_ENV)
    return env


def repo_key(url: str) -> str:
    """``owner/name`` of a GitHub URL in any spelling (https, git@, with or without .git)."""
    rest = url.split("github.com", 1)[1].lstrip(":/")
    return rest[: -len(".git")] if rest.endswith(".git") else rest


def submodule_name(path: str) -> str:
    """The ``[submodule "<name>"]`` of a path: NNPACK's dependencies are named apart from their paths."""
    leaf = path.rsplit("/", 1)[-1]
    return f"third_party/NNPACK_deps/{leaf}" if leaf in NNPACK_DEPS and path.startswith("third_party/") else path


@dataclass(frozen=True)
class World:
    """What ``make_world`` wrote and what a correct sync must produce."""

    root: Path
    top_url: str
    tags: Mapping[str, str]  # tag -> commit of the top repository
    submodules: Mapping[str, Mapping[str, str]]  # tag -> {path at any depth -> commit}
    repos: Mapping[str, Path] = field(default_factory=dict)  # "owner/name" -> bare repository

    @property
    def mirror_rule(self) -> str:
        """The ``--mirror`` value that maps GitHub onto this world."""
        return f"https://github.com/=file://{self.root}/"

    def file_url(self, owner_name: str) -> str:
        return f"file://{self.root}/{owner_name}.git"


@dataclass
class _Repo:
    """One repository being generated: its commits per tag (ids filled in after import)."""

    key: str
    children: tuple[tuple[str, str], ...] = ()
    commits: dict[int, str] = field(default_factory=dict)  # epoch -> last commit of that epoch


def _git(args: Sequence[str], cwd: Path | None = None, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=isolated_git_env(),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


class _Stream:
    """A ``git fast-import`` stream under construction."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.clock = 1_600_000_000

    def blob(self, data: bytes) -> int:
        self.mark += 1
        self.parts.append(b"blob\nmark :%d\ndata %d\n%s\n" % (self.mark, len(data), data))
        return self.mark

    def commit(self, message: str, parent: int | None, files: Mapping[str, int | str]) -> int:
        """``files``: path -> blob mark (a file) or a 40-hex commit id (a gitlink)."""
        self.mark += 1
        self.clock += 60
        msg = message.encode()
        out = [b"commit refs/heads/main\nmark :%d\n" % self.mark]
        out.append(b"committer srcbuild world <world@example.invalid> %d +0000\n" % self.clock)
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        if parent is not None:
            out.append(b"from :%d\n" % parent)
        for path, ref in sorted(files.items()):
            if isinstance(ref, int):
                out.append(b"M 100644 :%d %s\n" % (ref, path.encode()))
            else:
                out.append(b"M 160000 %s %s\n" % (ref.encode(), path.encode()))
        self.parts.append(b"".join(out) + b"\n")
        return self.mark

    def tag(self, name: str, commit_mark: int) -> None:
        msg = f"release {name}".encode()
        self.clock += 1
        self.parts.append(
            b"tag %s\nfrom :%d\ntagger srcbuild world <world@example.invalid> %d +0000\ndata %d\n%s\n"
            % (name.encode(), commit_mark, self.clock, len(msg), msg)
        )

    def run(self, repo: Path) -> dict[int, str]:
        """Import into a new bare repository; return mark -> object id."""
        repo.parent.mkdir(parents=True, exist_ok=True)
        _git(["init", "--bare", "--quiet", "--initial-branch=main", str(repo)])
        marks = repo / "srcbuild-world-marks"
        _git(["fast-import", "--quiet", f"--export-marks={marks}"], cwd=repo, stdin=b"".join(self.parts) + b"done\n")
        out = {}
        for line in marks.read_text().splitlines():
            mark, oid = line.split()
            out[int(mark[1:])] = oid
        marks.unlink()
        return out


def _content(rng: random.Random, size: int) -> bytes:
    """``size`` bytes of hex text in 64-column lines: compresses about 2x, like source code."""
    raw = rng.getrandbits(max(8, size * 4)).to_bytes(max(1, size // 2), "little").hex()[:size]
    return "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64)).encode() + b"\n"


def _gitmodules(entries: Sequence[tuple[str, str]]) -> bytes:
    lines = []
    for path, url in entries:
        lines += [f'[submodule "{submodule_name(path)}"]', f"\tpath = {path}", f"\turl = {url}"]
    return ("\n".join(lines) + "\n").encode()


def _write_repo(
    path: Path,
    key: str,
    n_epochs: int,
    commits: int,
    size: int,
    seed: int,
    children: Sequence[tuple[str, str, Mapping[int, str]]] = (),
    tags: Sequence[str] = (),
    project_files: Mapping[str, Mapping[str, bytes]] | None = None,
    n_files: int = 8,
) -> dict[int, str]:
    """Write one repository; return epoch -> commit id of the epoch's last commit.

    ``children``: (path, url, epoch -> commit) for each submodule; ``tags[e]`` tags epoch e's last commit.
    """
    rng = random.Random(f"{seed}:{key}")
    stream = _Stream()
    files: dict[str, int | str] = {}
    parent: int | None = None
    last: dict[int, int] = {}
    name = key.rsplit("/", 1)[-1]
    for epoch in range(n_epochs):
        for c in range(commits):
            if parent is None:
                for i in range(n_files):
                    files[f"src/{name}_{i}.c"] = stream.blob(_content(rng, size // 2))
                files["README.md"] = stream.blob(f"# {key}\n".encode())
            else:
                for j in (2 * c, 2 * c + 1):
                    files[f"src/{name}_{(j + epoch) % n_files}.c"] = stream.blob(_content(rng, size // 2))
            if c == commits - 1:
                if children:
                    files[".gitmodules"] = stream.blob(_gitmodules([(p, u) for p, u, _ in children]))
                    for p, _, by_epoch in children:
                        files[p] = by_epoch[epoch]
                if epoch < len(tags):
                    files["version.txt"] = stream.blob(f"{tags[epoch].lstrip('v')}\n".encode())
                    for fpath, data in (project_files or {}).get(tags[epoch], {}).items():
                        files[fpath] = stream.blob(data)
            parent = stream.commit(f"{key}: epoch {epoch} change {c}", parent, files)
        last[epoch] = parent  # type: ignore[assignment]
        if epoch < len(tags):
            stream.tag(tags[epoch], parent)  # type: ignore[arg-type]
    ids = stream.run(path)
    return {epoch: ids[mark] for epoch, mark in last.items()}


def make_world(
    root: Path,
    n_submodules: int = 36,
    nested: bool = True,
    project_files: Mapping[str, Mapping[str, bytes]] | None = None,
    tags: Sequence[str] = DEFAULT_TAGS,
    size: int = 16 * 1024,
    commits: int = 3,
    seed: int = 0,
) -> World:
    """Write a torch-shaped world under ``root`` (see the module docstring)."""
    if not 0 < n_submodules <= len(SUBMODULES):
        raise ValueError(f"n_submodules must be 1..{len(SUBMODULES)}")
    root = Path(root).resolve()
    top_subs = SUBMODULES[:n_submodules]
    n_epochs = len(tags)
    repos: dict[str, Path] = {}
    epochs: dict[str, dict[int, str]] = {}

    def build(key: str) -> dict[int, str]:
        if key in epochs:
            return epochs[key]
        kids = NESTED.get(key, ()) if nested else ()
        children = [(p, u, _pinning(build(repo_key(u)), i, n_epochs)) for i, (p, u) in enumerate(kids)]
        repos[key] = root / f"{key}.git"
        epochs[key] = _write_repo(repos[key], key, n_epochs, commits, size, seed, children)
        return epochs[key]

    children = [(p, u, _pinning(build(repo_key(u)), i, n_epochs)) for i, (p, u) in enumerate(top_subs)]
    top_key = repo_key(TOP)
    repos[top_key] = root / f"{top_key}.git"
    top = _write_repo(
        repos[top_key], top_key, n_epochs, commits, size * 4, seed, children, tags, project_files, n_files=16
    )
    tag_commits = {tag: top[e] for e, tag in enumerate(tags)}
    expected: dict[str, dict[str, str]] = {}
    for e, tag in enumerate(tags):
        expected[tag] = {}
        for p, u, by_epoch in children:
            expected[tag][p] = by_epoch[e]
            if nested:
                _expect_nested(expected[tag], p, repo_key(u), by_epoch[e], epochs, n_epochs)
    return World(root=root, top_url=TOP, tags=tag_commits, submodules=expected, repos=repos)


def _pinning(by_epoch: Mapping[int, str], index: int, n_epochs: int) -> dict[int, str]:
    """Which commit of a submodule each epoch records: every third submodule never moves."""
    if index % 3 == 2:
        return {e: by_epoch[0] for e in range(n_epochs)}
    return dict(by_epoch)


def _expect_nested(
    out: dict[str, str], path: str, key: str, commit: str, epochs: Mapping[str, Mapping[int, str]], n_epochs: int
) -> None:
    """Add the nested submodules recorded at ``commit`` of repository ``key`` (found by epoch)."""
    epoch = next(e for e, c in epochs[key].items() if c == commit)
    for i, (p, u) in enumerate(NESTED.get(key, ())):
        child = _pinning(epochs[repo_key(u)], i, n_epochs)[epoch]
        out[f"{path}/{p}"] = child
        _expect_nested(out, f"{path}/{p}", repo_key(u), child, epochs, n_epochs)


def make_project(
    root: Path,
    owner_name: str,
    project_files: Mapping[str, Mapping[str, bytes]],
    size: int = 16 * 1024,
    commits: int = 2,
    seed: int = 0,
) -> dict[str, str]:
    """A plain repository ``root/<owner_name>.git`` with one annotated tag per ``project_files`` key."""
    tags = list(project_files)
    path = Path(root).resolve() / f"{owner_name}.git"
    by_epoch = _write_repo(path, owner_name, len(tags), commits, size, seed, (), tags, project_files)
    return {tag: by_epoch[e] for e, tag in enumerate(tags)}
