"""Wheel verification without a GPU: CUDA kernels per compute capability, MPI linkage, tags and versions.

``fatbin`` reads the kernels an ELF file carries, ``kernels`` decides what runs where, ``wheel``
measures a wheel, ``checks`` and ``report`` judge it against a recipe, ``smoke`` runs the wheel on
a machine (with or without a GPU).
"""
