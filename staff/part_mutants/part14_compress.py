"""Part 14's known bugs and correct variants (top-k compression with error feedback)."""
from staff.mutant_types import Mutant

MUTANTS = [
    Mutant("top-k that breaks ties toward the higher index", "compression.cpp",
           "return ma != mb ? ma > mb : a < b;", "return ma != mb ? ma > mb : a > b;", ("part14_compress",),
           says=(r"topk of a tied vector \(20 elements, rank \d\), k = 4: the indices are \[[\d, ]+\], where the "
                 r"top-4's are",)),
    Mutant("error feedback that never updates the residual", "compression.cpp",
           "  ef.residual = p - dense(c);\n", "", ("part14_compress",),
           says=(r"compress_with_feedback, step 1 \(12 elements, k = 3, rank \d\): the residual at \d+ is 0, where "
                 r"p - dense\(c\) is",)),
    Mutant("a sparse mean divided by k", "compression.cpp",
           "  return sum / comm.size();", "  return sum / static_cast<double>(k);", ("part14_compress",)),
    Mutant("the sparse mean by a dense allreduce (the right values, the wrong traffic)", "compression.cpp",
           "  comm.allgather(index, all_index);\n  comm.allgather(mine.value, all_value);\n  Vector sum = Vector::Zero(mine.n);  // (N)\n"
           "  for (Eigen::Index i = 0; i < all_index.size(); ++i) sum(static_cast<Eigen::Index>(all_index(i))) += all_value(i);",
           "  Vector sum(mine.n);  // (N)\n  comm.allreduce(dense(mine), sum);",
           ("part14_compress",),
           says=(r"sparse_allreduce_mean on rank \d of [24] \(K = 4 of N = 20\): made 1 calls \(allreduce of 20 "
                 r"elements, the first [-\d.e]+, summing to [-\d.e+]+\), where it makes two",)),
    Mutant("the sparse mean gathering the values first (the right values, in another order)", "compression.cpp",
           "  comm.allgather(index, all_index);\n  comm.allgather(mine.value, all_value);",
           "  comm.allgather(mine.value, all_value);\n  comm.allgather(index, all_index);",
           ("part14_compress",),
           says=(r"sparse_allreduce_mean on rank \d of [24] \(K = 4 of N = 20\), call 1: allgather of 4 elements, the "
                 r"first \d+\.5, summing to [-\d.e+]+, where the handout's gathers the indices",)),
]
