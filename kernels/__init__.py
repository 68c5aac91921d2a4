"""Triton kernels and launchers (shipped as spherekit.kernels)."""
