"""The fixture world for build tests: the fake torch, torchvision and torchaudio published as git repos.

``publish(root)`` writes, with the sources team's ``make_world``/``make_project``, a torch-shaped
world whose ``pytorch/pytorch`` tags hold the fake torch (``v2.5.1``, ``v2.9.0``; ``v2.5.0`` is the
failure tag: its last library does not compile) and whose ``pytorch/vision`` tags hold the fake
torchvision (``v0.20.1``, ``v0.24.0``), and ``pytorch/audio`` the fake torchaudio (``v2.5.1``).
The recipes in ``tests/fixtures/recipes/world`` pin them.
"""

from __future__ import annotations

from pathlib import Path

from tests.worlds.gitworld import World, make_project, make_world

WORLDS = Path(__file__).resolve().parents[2] / "worlds"
RECIPES = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world"
TORCH_TAGS = ("v2.5.0", "v2.5.1", "v2.9.0")
FAILURE_TAG = "v2.5.0"
VISION_TAGS = ("v0.20.1", "v0.24.0")
AUDIO_TAGS = ("v2.5.1",)
BROKEN_BINDINGS = b"""/* The failure tag: this file does not compile. */
int fake_torch_python_init(void) { return undefined_symbol_in_failure_tag; }
"""


def project_files(name: str) -> dict[str, bytes]:
    """Every file of ``tests/worlds/<name>`` (relative path -> bytes), build outputs left out."""
    root = WORLDS / name
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and "__pycache__" not in rel and not rel.startswith(("build/", "dist/")):
            out[rel] = path.read_bytes()
    return out


def extra_op(n: int, functions: int = 400) -> bytes:
    """A generated C file shaped like ``csrc/ops_01.c``: ``functions`` small loops the optimizer
    has to chew on and one exported entry point (the CMake project globs ``csrc/ops_*.c``)."""
    lines = [f"/* Generated op {n}: more C for a larger fixture build. */", "#include <stddef.h>", ""]
    for i in range(functions):
        lines.append(
            f"static double op{n}_{i}(double x) {{ double s = 0; for (int k = 0; k < {i + 3}; ++k) "
            f"s += (x * k + {i}) / (k + 1.5); return s; }}"
        )
    lines += ["", f"int fake_torch_op{n}(int n) {{", "  double acc = 0;"]
    lines += [f"  acc += op{n}_{i}((double)n + {i});" for i in range(functions)]
    lines += ["  return (int)acc;", "}", ""]
    return "\n".join(lines).encode()


def torch_files(tag: str, extra_ops: int = 0) -> dict[str, bytes]:
    files = project_files("fake_torch")
    if tag == FAILURE_TAG:
        files["csrc/python_bindings.c"] = BROKEN_BINDINGS
    for n in range(100, 100 + extra_ops):
        files[f"csrc/ops_{n}.c"] = extra_op(n)
    return files


def publish(root: Path, n_submodules: int = 3, extra_ops: int = 0) -> World:
    """Write the world under ``root`` and return it (``World.mirror_rule`` maps GitHub onto it).
    ``extra_ops`` adds that many generated C files to the fake torch (a larger build, for benchmarks)."""
    world = make_world(
        root,
        n_submodules=n_submodules,
        nested=False,
        project_files={tag: torch_files(tag, extra_ops) for tag in TORCH_TAGS},
        tags=TORCH_TAGS,
        size=1024,
        commits=1,
    )
    vision = project_files("fake_vision")
    make_project(root, "pytorch/vision", {tag: vision for tag in VISION_TAGS}, size=1024, commits=1)
    audio = project_files("fake_audio")
    make_project(root, "pytorch/audio", {tag: audio for tag in AUDIO_TAGS}, size=1024, commits=1)
    return world
