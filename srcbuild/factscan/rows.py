"""Print what wheels state as rows of ``srcbuild/knowledge/data``, each with its evidence.

A row carries only the fields the binary settles, and ``source = "binary: FILE sha256:HASH"``;
comment lines before it say when it was read and what each library holds, so that a maintainer can
paste the row, or the source, into the table.
"""

from __future__ import annotations

from srcbuild.factscan.read import WheelFacts, ccs_text
from srcbuild.knowledge import versions
from srcbuild.packages import PACKAGES


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line_of(version: str, parts: int = 2) -> str:
    return versions.show(versions.line(versions.parse(version), parts))


def _comments(facts: WheelFacts) -> list[str]:
    lines = [f"# {facts.file}", f"#   sha256 {facts.sha256}, read {facts.read_on}"]
    said = [f"version {facts.version}" + (f"+{facts.local}" if facts.local else "")]
    if facts.cuda:
        said.append(f"CUDA {facts.cuda}")
    said.append(f"Python {' '.join(facts.python_tags)}")
    said.append(" ".join(facts.platform_tags))
    lines.append("#   " + ", ".join(said))
    if facts.requires_python:
        lines.append(f"#   Requires-Python {facts.requires_python}")
    if facts.requires_torch:
        lines.append(f"#   Requires-Dist torch{facts.requires_torch}")
    for lib in facts.device_libraries:
        lines.append(f"#   {lib.name}: SASS {ccs_text(lib.sass)}; PTX {ccs_text(lib.ptx)}")
    if facts.kind == "nvcc":
        targets = " ".join(f"sm_{n}" for n in facts.ptxas_sass) or f"not read ({facts.ptxas_note})"
        lines.append(f"#   ptxas --gpu-name: {targets}")
    if facts.kind in ("nvcc", "crt"):
        low = facts.gcc_min if facts.gcc_min is not None else "no bound"
        high = facts.gcc_max if facts.gcc_max is not None else "no bound"
        lines.append(f"#   crt/host_config.h: gcc lowest {low}, highest {high}")
    return lines


def _body(facts: WheelFacts) -> list[str]:
    lowest = facts.lowest_sass()
    source = f"source = {_q(facts.evidence)}"
    if facts.kind == "torch":
        if lowest is None or not facts.cuda_tag:
            return ["# no device code: a CPU wheel states no GPUs"]
        return [
            "[[torch]]",
            f"version = {_q(_line_of(facts.version))}",
            f"official_wheels = {{ {facts.cuda_tag} = {_q(str(lowest))} }}",
            source,
        ]
    if facts.kind in PACKAGES:  # torchvision, torchaudio (torch's own rows are above)
        if not facts.requires_torch:
            return ["# no Requires-Dist on torch"]
        pinned = facts.requires_torch
        if pinned.startswith("=="):
            torch = pinned[2:]
            return [
                "[[torch]]",
                f"version = {_q(_line_of(torch))}",
                f"{facts.kind} = {{ {_q(torch)} = [{_q(facts.version)}] }}",
                source,
            ]
        return [f"# {facts.kind} {facts.version} admits torch{pinned}: pair it by hand (the pin is not one release)"]
    if facts.kind in ("cudnn", "nccl"):
        if lowest is None or facts.cuda is None:
            return ["# no device code"]
        return [
            f"[[{facts.kind}]]",
            f"version = {_q(_line_of(facts.version))}",
            f"lowest_cc = {{ {_q(facts.cuda)} = {_q(str(lowest))} }}",
            source,
        ]
    if facts.kind in ("nvcc", "crt"):
        body = ["[[cuda]]", f"version = {_q(facts.cuda or facts.version)}"]
        if facts.ptxas_sass:
            body.append(f"sass = {_q(' '.join(facts.ptxas_sass))}")
            body.append(f"ptx = {_q(' '.join(facts.ptxas_ptx))}")
            body.append(f"targets = {_q(facts.evidence + ' (ptxas --help, --gpu-name)')}")
        if facts.gcc_min is not None:
            body.append(f"min_gcc = {facts.gcc_min}")
        if facts.gcc_max is not None:
            body.append(f"max_gcc = {facts.gcc_max}")
        return [*body, source]
    return ["# not a torch, torchvision, cuDNN, NCCL or nvcc wheel: nothing to row"]


def render(facts: WheelFacts) -> list[str]:
    """The row(s) for one wheel, in the data files' format, with the evidence as comments and source."""
    return [*_comments(facts), *_body(facts)]
