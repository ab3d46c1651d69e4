"""What users hand to kernelcast, checked and prepared: Loopy kernels (loopy) and kernels
named on the command line as FILE.py:FACTORY (files)."""
