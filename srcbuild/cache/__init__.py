"""The wheel cache: fingerprinted, arch-aware, shared across machines.

``key`` defines the cache key (a documented contract), ``manifest`` the description stored beside
each wheel, ``store`` the local store, ``remotes`` the shared stores (directory, S3, HTTP index),
``transfer`` push/pull with sha256 checks, ``simple_index`` the PEP 503 index, ``fit`` whether a
wheel can run on a machine and ``install`` the `srcbuild install` flow.
"""
