"""GROPHECY's compiler parameters (Table 3 of the paper, shared/seeds/004): instruction
counts its authors read from NVCC's PTX for the peripheral instructions a code layout adds
(§7.3). They are properties of the paper's compiler, not of our hardware, and are used as
published.

Public names: UNROLL_GROUP, PER_BRANCH, PER_LOOP_ITERATION, PER_SHARED_LOAD,
PER_UNCOALESCED_INDEX.
"""

# No. of loops to unroll: iterations are batched into groups of 16 unrolled iterations
UNROLL_GROUP = 16
# No. of peripheral instructions per conditional branch
PER_BRANCH = 3
# No. of peripheral instructions per loop iteration (not for unrolled iterations)
PER_LOOP_ITERATION = 5
# No. of peripheral instructions for loading an element into shared memory
PER_SHARED_LOAD = 2
# No. of peripheral instructions to calculate an index for an uncoalesced access
PER_UNCOALESCED_INDEX = 4
