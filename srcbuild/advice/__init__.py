"""Advice from facts: the toolchain window of a GPU, recipe recommendations, and the doctor's verdicts.

``window`` combines knowledge-base facts for one compute capability, ``recommend`` ranks catalog
recipes for GPUs, ``doctor`` judges every catalog recipe against this machine, ``render`` turns
their results into text. None of them probes the machine; the callers pass ``HostFacts`` in.
"""
