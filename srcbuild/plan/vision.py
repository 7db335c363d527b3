"""Steps only the builds of packages built against torch have (torchvision, torchaudio): letting
the installed torch accept compute capability 3.0.

torch's ``torch/utils/cpp_extension.py`` checks TORCH_CUDA_ARCH_LIST against its
``supported_arches`` list when an extension is built, and no torch release lists '3.0' there, so
torchvision's build for a recipe with ``gpu.arch = ["3.0"]`` stops with
``ValueError: Unknown CUDA arch (3.0) or GPU not supported`` (pytorch/vision#1841). The known fix
adds '3.0' to the list of the torch installed in the build environment before torchvision is
built (dizcza/pytorch-sm30-docker: Dockerfile,
``sed -i "s/supported_arches = \\[/supported_arches = ['3.0', /"``; compat.md §4.4; knowledge base
breakage ``torchvision-sm30-supported-arches``). Which arches need it is resolved
(``srcbuild.resolve.arches``). The step finds the file through the
environment's python, so it patches exactly the torch the build imports, and it is idempotent.
A torch without the list (older than the check) is left as it is.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.command import Command
from srcbuild.plan.model import Step

# Run by the build environment's python with the archs to add as arguments. Adds each one to every
# `supported_arches = [...]` list that lacks it (what the sed does), and says what it did.
PATCH_SCRIPT = r"""import re, sys
import torch.utils.cpp_extension as m
path = m.__file__
text = open(path, encoding="utf-8").read()
pattern = r"supported_arches = \[([^\]]*)\]"
lists = re.findall(pattern, text)
def listed(arch, body):
    return repr(arch) in body or chr(34) + arch + chr(34) in body
missing = [a for a in sys.argv[1:] if any(not listed(a, body) for body in lists)]
if not lists:
    print(path + ": no supported_arches list: this torch does not check TORCH_CUDA_ARCH_LIST")
elif not missing:
    print(path + ": supported_arches already lists " + ", ".join(sys.argv[1:]))
else:
    def add(found):
        new = [repr(a) + ", " for a in missing if not listed(a, found.group(1))]
        return "supported_arches = [" + "".join(new) + found.group(1) + "]"
    open(path, "w", encoding="utf-8").write(re.sub(pattern, add, text))
    print(path + ": added " + ", ".join(missing) + " to supported_arches")
"""


def supported_arches_step(
    arches: tuple[str, ...], source: str, python: Path, package: str
) -> Step | None:
    """The ``torch-arches`` step, or None when the build has no arch torch's list lacks."""
    if not arches:
        return None
    names = ", ".join(arches)
    argv = (str(python), "-c", PATCH_SCRIPT, *arches)
    return Step(
        id="torch-arches",
        title=f"Let the installed torch build extensions for compute capability {names}",
        why=f"torch.utils.cpp_extension's supported_arches never lists {names}, so {package}'s build would stop "
        f"with 'ValueError: Unknown CUDA arch ({arches[0]}) or GPU not supported'; add {names} to the list of the "
        f"torch installed in the build environment (idempotent). Source: {source}",
        commands=(
            Command(
                argv,
                f"add {names} to supported_arches in the torch/utils/cpp_extension.py this python imports "
                "(as sed -i \"s/supported_arches = \\[/supported_arches = ['3.0', /\" does); nothing when listed",
            ),
        ),
    )
