"""Advice from facts: the toolchain window of a GPU, recipe recommendations, and the doctor's verdicts.

``window`` combines knowledge-base facts for one compute capability (the one window ``compat``,
``recommend`` and ``doctor`` show), ``fit`` gives each recipe's verdict on one GPU, ``recommend``
leads with the official wheel or the recipe to build, ``doctor`` judges every catalog recipe
against this machine, ``render`` turns their results into text. None of them probes the machine;
the callers pass ``HostFacts`` in.
"""
