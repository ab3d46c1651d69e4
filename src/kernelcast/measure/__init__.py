"""Running kernels on devices: arguments, backends, timing, the measurement store."""
