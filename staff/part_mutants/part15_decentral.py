"""Part 15's known bugs and correct variants (decentralized SGD on a ring)."""
from staff.mutant_types import Mutant

MUTANTS = [
    Mutant("gossip with its two tags swapped", "decentralized.cpp",
           "comm.sendrecv(x, right, 0, from_left, left, 0);", "comm.sendrecv(x, right, 1, from_left, left, 1);",
           ("part15_decentral",),
           says=(r"gossip_mix, step 1, call 1 on rank \d of [2-8]: sendrecv to rank \d \(tag 1\) from rank \d \(tag 1\), "
                 r"\d+ elements, where the handout's is sendrecv to rank \d \(tag 0\) from rank \d \(tag 0\)",)),
    Mutant("gossip that sends left first (the right values, in another order)", "decentralized.cpp",
           "  comm.sendrecv(x, right, 0, from_left, left, 0);\n  if (p == 2) {\n    x = (x + from_left) / 2.0;\n"
           "    return;\n  }\n  Vector from_right(x.size());  // (N): the right neighbour's\n"
           "  comm.sendrecv(x, left, 1, from_right, right, 1);",
           "  comm.sendrecv(x, left, 0, from_left, right, 0);\n  if (p == 2) {\n    x = (x + from_left) / 2.0;\n"
           "    return;\n  }\n  Vector from_right(x.size());  // (N): the right neighbour's\n"
           "  comm.sendrecv(x, right, 1, from_right, left, 1);",
           ("part15_decentral",), says=(r"gossip_mix, step 1, call 1 on rank \d of [3-8]: sendrecv to rank \d \(tag 0\) "
                                        r"from rank \d \(tag 0\), \d+ elements, where the handout's is",)),
    Mutant("gossip on two ranks that weights the other rank twice", "decentralized.cpp",
           "x = (x + from_left) / 2.0;", "x = (x + 2.0 * from_left) / 3.0;", ("part15_decentral",)),
    Mutant("decentralized SGD that steps before it mixes", "decentralized.cpp",
           "  gossip_mix(w, comm);\n  w -= lr * grad;", "  w -= lr * grad;\n  gossip_mix(w, comm);",
           ("part15_decentral",)),
]
