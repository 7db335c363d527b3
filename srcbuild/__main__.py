"""`python -m srcbuild`: the same entry point as the `srcbuild` console script."""

from srcbuild.cli import entrypoint

if __name__ == "__main__":
    entrypoint()
