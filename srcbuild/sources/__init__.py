"""Sources: the shared git object cache, mirror rules, submodules and patches of a build.

``mirrors`` turns ``--mirror`` values into git ``insteadOf`` rules, ``sync`` plans and checks a
checkout of a pinned tag with its submodules, ``patches`` checks and applies a recipe's patches
once, and ``diagnose`` explains a failed git command.
"""
