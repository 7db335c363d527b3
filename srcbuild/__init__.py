"""srcbuild: build PyTorch and torchvision wheels from source for legacy NVIDIA GPUs."""

__version__ = "0.1.0"
