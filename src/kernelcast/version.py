"""kernelcast's version, in a module of its own so that any module can import it without
importing the package root (which imports most of kernelcast)."""

__version__ = "0.1.0"
