"""Part 11's known bugs and correct variants (ring collectives)."""
from staff.mutant_types import Mutant

MUTANTS = [
    Mutant("ring with a wrong block order", "ring_collectives.cpp",
           "const int out = wrap(r - s), in = wrap(r - s - 1);", "const int out = wrap(r + s), in = wrap(r - s - 1);",
           ("part11_ring",)),
    Mutant("ring without its all-gather phase", "ring_collectives.cpp",
           "  for (int s = 0; s < n - 1; ++s) {\n    const int out = wrap(r + 1 - s)",
           "  for (int s = 0; s < 0; ++s) {\n    const int out = wrap(r + 1 - s)", ("part11_ring",)),
    Mutant("naive allreduce that skips rank 0's own buffer", "ring_collectives.cpp",
           "  sum = src;\n", "  sum.setZero();\n", ("part11_ring",)),
]
