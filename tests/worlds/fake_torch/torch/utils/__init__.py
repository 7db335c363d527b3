"""torch.utils of the fake torch: only what torchvision's build uses (cpp_extension)."""
