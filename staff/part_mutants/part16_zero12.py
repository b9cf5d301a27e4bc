"""Part 16's known bugs and correct variants (ZeRO stages 1 and 2 for Adam)."""
from staff.mutant_types import Mutant

MUTANTS = [
    Mutant("ZeRO keeping whole moments (the right values, the wrong memory)", "zero_stage12.cpp",
           "  if (a.m.size() == 0) a.m = a.v = Vector::Zero(l.shard);\n  a.m = a.beta1 * a.m + (1 - a.beta1) * g;\n"
           "  a.v = a.beta2 * a.v + (1 - a.beta2) * g.cwiseProduct(g);\n"
           "  const double c1 = 1 - std::pow(a.beta1, a.step_idx), c2 = 1 - std::pow(a.beta2, a.step_idx);\n"
           "  const Vector m_hat = a.m / c1, v_hat = a.v / c2;",
           "  if (a.m.size() == 0) a.m = a.v = Vector::Zero(l.padded);\n"
           "  a.m.segment(first, l.shard) = a.beta1 * a.m.segment(first, l.shard) + (1 - a.beta1) * g;\n"
           "  a.v.segment(first, l.shard) = a.beta2 * a.v.segment(first, l.shard) + (1 - a.beta2) * g.cwiseProduct(g);\n"
           "  const double c1 = 1 - std::pow(a.beta1, a.step_idx), c2 = 1 - std::pow(a.beta2, a.step_idx);\n"
           "  const Vector m_hat = a.m.segment(first, l.shard) / c1, v_hat = a.v.segment(first, l.shard) / c2;",
           ("part16_zero12",),
           says=(r"Zero1Adam::step, step 1 on rank \d of \d \(N = 12, S = \d+\): the optimizer keeps m of 1[26] and v of "
                 r"1[26] elements, where it keeps this rank's shard of each",)),
    Mutant("stage 2 all-reducing instead of reduce-scattering (the right values, the wrong traffic)",
           "zero_stage12.cpp", "  comm.reduce_scatter(padded, g);",
           "  Vector whole(l.padded);\n  comm.allreduce(padded, whole);\n  g = whole.segment(comm.rank() * l.shard, l.shard);",
           ("part16_zero12",),
           says=(r"Zero2Adam::step, step 1 on rank \d of \d \(N = 12, S = \d+\): its calls were allreduce of \d+ "
                 r"elements; allgather of \d+ elements, where stage 2 makes reduce_scatter",)),
    # The red team's: the rule kept only up to the public cases' largest vector (20,000 elements).
    Mutant("stage 2 reduce-scattering only up to the public cases' size (the wrong traffic above it)",
           "zero_stage12.cpp", "  comm.reduce_scatter(padded, g);",
           "  if (n <= 20000) {\n    comm.reduce_scatter(padded, g);\n  } else {\n    Vector whole(l.padded);\n"
           "    comm.allreduce(padded, whole);\n    g = whole.segment(comm.rank() * l.shard, l.shard);\n  }",
           ("part16_zero12",), hidden=True),
    Mutant("bias correction one step off", "zero_stage12.cpp",
           "const double c1 = 1 - std::pow(a.beta1, a.step_idx)", "const double c1 = 1 - std::pow(a.beta1, a.step_idx + 1)",
           ("part16_zero12",)),
    Mutant("stage 1 that sums the gradients and never averages them", "zero_stage12.cpp",
           "g(i) = sum(first + i) / comm.size();", "g(i) = sum(first + i);", ("part16_zero12",)),
]
