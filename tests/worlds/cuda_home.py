"""A CUDA home laid out with every header and library linker name the complete-home contract
(srcbuild/knowledge/data/cuda_components.toml) asks of a release, less the components named."""

from __future__ import annotations

from pathlib import Path

from srcbuild.knowledge.cuda_components import components_for


def make_home(home: Path, version: str, skip: tuple[str, ...] = (), layout: str = "include") -> Path:
    """``layout="cccl"`` puts each header at its last alternative (CUDA 13's include/cccl/thrust)."""
    for component in components_for(version):
        if component.name in skip:
            continue
        for header in component.headers:
            name = header.split("|")[0] if layout == "include" else header.split("|")[-1]
            path = home / "include" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        for lib in component.libraries:
            (home / "lib64").mkdir(parents=True, exist_ok=True)
            (home / "lib64" / f"lib{lib}.so.1").write_text("")
            (home / "lib64" / f"lib{lib}.so").symlink_to(f"lib{lib}.so.1")
        for name in component.files:
            (home / "lib64" / name).parent.mkdir(parents=True, exist_ok=True)
            (home / "lib64" / name).write_text("")
    return home
