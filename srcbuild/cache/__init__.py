"""The wheel cache: fingerprinted, arch-aware, shared across machines.

``key`` defines the cache key (a documented contract), ``manifest`` the description stored beside
each wheel, ``store`` the local store (atomic writes, arch-aware lookup, build lock),
``maintenance`` verify and gc, ``remotes`` the shared stores (directory, S3, HTTP index) behind one
protocol, ``transfer`` push/pull with sha256 checks on arrival, ``simple_index`` the PEP 503 index
and its server, ``fit`` whether a wheel can run on a machine and ``install`` the `srcbuild install`
flow.
"""
