"""The canary of a torch build: configure for real, read back what CMake decided, compile a few
translation units for every recipe arch, all before the long compile (``readout`` parses and
compares; the plan step is ``srcbuild.plan.canary``, its handler ``srcbuild.execute.canary``)."""
