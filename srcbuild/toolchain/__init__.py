"""Provisioning the toolchain a recipe pins (CUDA toolkit, cuDNN, gcc, MPI, NCCL, MAGMA) into private prefixes.

- ``store``: the toolchains directory: one prefix per (name, version, provider), made in a temp dir
  and renamed into place under a lock, with a manifest saying what it holds and where it came from.
- ``download``: fetching files whose sha256 the data records, with resume, a mirror and progress.
- ``facts``: the sourced data (URLs, sha256, components) in ``toolchain/data/``.
- ``providers``: one module per way of getting a tool (Debian packages, NVIDIA redist archives,
  NVIDIA runfiles, cuDNN archives, conda packages, NCCL from source) behind one ``Protocol``.
- ``needs``: what a recipe needs that the host lacks, and which provider serves it (pure).

Nothing here installs a driver, needs root, or writes outside the toolchains directory.
"""
