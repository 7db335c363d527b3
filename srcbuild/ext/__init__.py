"""PyTorch extensions (torch-scatter, mmcv, detectron2, ...) built from source against a chosen torch.

``srcbuild ext NAME --recipe R`` compiles an extension's sdist (or git source) with the recipe's
toolchain and archs against exactly one torch wheel, verifies its kernels and caches it. The
pieces: ``knowledge`` (per-package build variables, as data with sources), ``source`` (the
requirement, the sdist fetched from the index pip is configured with), ``torch`` (the identity
of the torch it builds against: version, CUDA, archs read from its binaries), ``preflight``
(what stops a build before compiling) and ``key`` (the cache key).
"""
