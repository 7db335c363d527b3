"""torch.utils.cpp_extension of the fake torch: the arch-list check extensions are built with.

``_get_cuda_arch_flags`` is torch's own logic (pytorch/pytorch: torch/utils/cpp_extension.py):
every entry of TORCH_CUDA_ARCH_LIST must be in ``supported_arches`` (or be one with ``+PTX``),
else ``ValueError: Unknown CUDA arch (X) or GPU not supported``. Like every torch release, the
list starts at 3.5: building torchvision for compute capability 3.0 stops here until '3.0' is
added to it (dizcza/pytorch-sm30-docker's Dockerfile does it with sed; srcbuild has a step).
"""

import os


def _get_cuda_arch_flags(cflags=None):
    """The nvcc -gencode flags for TORCH_CUDA_ARCH_LIST; ValueError for an arch not in the list."""
    # fmt: off
    # spelled as torch spells it (single quotes, the list over two lines), which the known sed fix matches
    supported_arches = ['3.5', '3.7', '5.0', '5.2', '5.3', '6.0', '6.1', '6.2',
                        '7.0', '7.2', '7.5', '8.0', '8.6']
    # fmt: on
    valid_arch_strings = supported_arches + [s + "+PTX" for s in supported_arches]
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    flags = []
    for arch in arch_list.replace(" ", ";").split(";"):
        if not arch:
            continue
        if arch not in valid_arch_strings:
            raise ValueError(f"Unknown CUDA arch ({arch}) or GPU not supported")
        num = arch[0] + arch[2]
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if arch.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return sorted(set(flags))
