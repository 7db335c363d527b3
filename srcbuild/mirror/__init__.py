"""Mirror directories: everything a recipe's builds download, gathered for a machine without a
network (``srcbuild mirror create/verify``, ``--mirror-dir``). ``layout`` is a leaf the settings
read; ``gather``, ``gitrepos``, ``create`` and ``manifest`` make and check a mirror."""
