"""``srcbuild knowledge scan``: facts read from upstream's binaries, in the data files' own rows.

A torch or torchvision wheel states its version, its CUDA (``<package>/version.py``), its Python
and platform (the file name), its GPUs (the fat binaries of each library) and, for torchvision, the
torch it pins (``Requires-Dist: torch``); a cuDNN or NCCL wheel states its GPUs; an nvcc wheel
states the targets its ``ptxas`` accepts and the host gcc ``crt/host_config.h`` allows.
``read.scan_wheel`` reads them (``verify.wheel``'s streaming reader for the libraries),
``rows.render`` prints them as rows of ``srcbuild/knowledge/data`` with their evidence, and
``compare.check`` says where the shipped tables contradict them.
"""
