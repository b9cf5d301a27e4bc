"""The known bugs and the correct variants that staff/mutants.py checks:
each names a student file, a piece of the reference's text and its
replacement, the parts it must cost and the messages it must give. The
grader's and the staff's tests take bugs from here too. The base parts'
are here; an extension part's are its own file, staff/part_mutants/KEY.py,
added where the copy holds the part.

  python3 -m staff.mutants      (runs them; this file is only the table)
"""
import importlib
import os
from typing import List

from kit.part_table import TABLE
from kit.limits import RANK_HEAP_BUDGET_MIB
from staff.mutant_types import Mutant


WRONG_ANSWERS_FROM = "data split by rank instead of by data-parallel group"  # the first of the list's second half


MUTANTS: List[Mutant] = [
    # Broken in ways that must cost one case, never the run.
    Mutant("throws on one rank only", "func_impl.cpp",
           "Matrix naive_collect_forward_input(const Matrix& x, Communicator& mp_comm, int mp_size) {",
           "Matrix naive_collect_forward_input(const Matrix& x, Communicator& mp_comm, int mp_size) {\n"
           "  if (mp_comm.rank() == 1 && x.rows() == 2) throw std::runtime_error(\"rank 1 gives up\");",
           ("part3",), says=(r"exception in naive_collect_forward_input \(called with x \(2, 2\)\): rank 1 gives up",),
           hangs=True),
    Mutant("segfaults on one rank", "func_impl.cpp",
           "Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {",
           "Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {\n"
           "  if (mp_group_idx == 2 && output_grad.rows() == 2) { volatile int* p = nullptr; *p = 1; }",
           ("part5",), says=(r"crashed with SIGSEGV \(invalid memory access\) in naive_collect_backward_output",)),
    Mutant("calls exit(0) in the middle of a case", "func_impl.cpp",
           "Matrix megatron_collect_backward_x(const Matrix& grad_x, Communicator& mp_comm, int mp_size) {",
           "Matrix megatron_collect_backward_x(const Matrix& grad_x, Communicator& mp_comm, int mp_size) {\n"
           "  if (grad_x.rows() == 2 && mp_comm.rank() == 3) std::exit(0);",
           ("part6",), says=("exited in the middle of the case",)),
    Mutant("keeps 600 MB a rank in get_info", "func_impl.cpp",
           "  const int mp_idx = rank % mp_size;",
           "  static std::vector<char> kept;  // 600 MB a rank, kept between calls\n"
           "  kept.resize(600u << 20, 1);\n  const int mp_idx = rank % mp_size;",
           ("part2",), zero=("part2",),
           says=(r"over its memory budget: get_info asked for a block of 600\.0 MiB while the rank held [\d.]+ MiB; "
                 rf"a rank may hold {RANK_HEAP_BUDGET_MIB}\.0 MiB of heap at once",)),
    Mutant("rank 0 returns before its allreduces", "func_impl.cpp",
           "  Matrix sum_w(grad_w.rows(), grad_w.cols());",
           "  if (dp_comm.rank() == 0) return {grad_w, grad_b};  // the others wait for rank 0 in allreduce\n"
           "  Matrix sum_w(grad_w.rows(), grad_w.cols());",
           ("part7",), zero=("part7",),
           says=(r"ranks 1,2,3: +waiting in allreduce #1 on dp_comm \(\d+ elements\) in collect_weight_grad",),
           hangs=True),
    # Ranks that disagree about their collectives: the diagnosis names the
    # function, the collective, its element count and the ranks concerned.
    Mutant("one rank calls an extra allreduce", "func_impl.cpp",
           "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
           "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n"
           "  if (grad_w.rows() == 4 && dp_comm.rank() == 0) dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
           ("part7",), says=(r"rank 0: +waiting in allreduce #3 on dp_comm \(\d+ elements\) in collect_weight_grad",
                             r"ranks 1,2,3: +finished the case after 2 collectives on dp_comm"), hangs=True),
    Mutant("one rank makes its two allreduces in swapped order", "func_impl.cpp",
           "  dp_comm.allreduce(grad_w, sum_w, Op::Sum);\n  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
           "  if (dp_comm.rank() == 1) {\n    dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n"
           "    dp_comm.allreduce(grad_w, sum_w, Op::Sum);\n  } else {\n"
           "    dp_comm.allreduce(grad_w, sum_w, Op::Sum);\n    dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n  }\n",
           ("part7",), says=(r"collective #1 on dp_comm in collect_weight_grad: ranks disagree",
                             r"rank 1: +allreduce, 8 elements \(Sum\)", r"ranks 0,2,3: +allreduce, 16 elements \(Sum\)")),
    Mutant("one rank all-gathers where the others all-reduce", "func_impl.cpp",
           "  mp_comm.allreduce(out, total, Op::Sum);\n",
           "  if (mp_comm.rank() == 2) {\n    Matrix all(out.rows() * mp_size, out.cols());\n"
           "    mp_comm.allgather(out, all);\n    total = all.topRows(out.rows());\n"
           "  } else {\n    mp_comm.allreduce(out, total, Op::Sum);\n  }\n",
           ("part4",), says=(r"collective #1 on mp_comm in megatron_collect_forward_output: ranks disagree",
                             r"rank 2: +allgather, \d+ elements\n", r"ranks 0,1,3: +allreduce, \d+ elements \(Sum\)")),
    Mutant("one rank reduces with Max where the others Sum", "func_impl.cpp",
           "  mp_comm.allreduce(out, total, Op::Sum);\n",
           "  mp_comm.allreduce(out, total, mp_comm.rank() == 0 ? Op::Max : Op::Sum);\n",
           ("part4",), says=(r"rank 0: +allreduce, \d+ elements \(Max\)",)),
    Mutant("one rank all-gathers one row fewer", "func_impl.cpp",
           "  comm.allgather(block, stacked);\n",
           "  if (comm.rank() == 1 && block.rows() > 1) {\n"
           "    const Matrix fewer = block.topRows(block.rows() - 1);\n"
           "    Matrix part(fewer.rows() * parts, fewer.cols());\n    comm.allgather(fewer, part);\n"
           "    stacked.topRows(part.rows()) = part;\n  } else {\n    comm.allgather(block, stacked);\n  }\n",
           ("part3",), says=(r"collective #1 on mp_comm in naive_collect_forward_(in|out)put: ranks disagree",
                             r"rank 1: +allgather, \d+ elements\n")),
    Mutant("one rank skips the bias reduce-scatter in the ZeRO backward", "zero_dp_stage3.cpp",
           "  comm.reduce_scatter(grad_b.flat, grad_b_shard, Op::Sum);",
           "  if (comm.rank() != 3) comm.reduce_scatter(grad_b.flat, grad_b_shard, Op::Sum);",
           ("part8_backward", "part9"),
           says=(r"ranks 0,1,2: +waiting in reduce_scatter #\d+ on comm \(\d+ elements?\) in ZeroDPStage3FCLayer::backward",
                 r"rank 3: +failed \(backward: no reduce-scatter of \d+ elements? \(the bias gradient\), which "
                 r"ZeRO-3's backward makes\)"), hangs=True),
    # Wrong answers, at least one per part.
    Mutant("data split by rank instead of by data-parallel group", "data_parallel_preprocess.cpp",
           "const Eigen::Index first = (rank / mp_size) * rows;",
           "const Eigen::Index first = (rank % dp_size) * rows;", ("part1",)),
    Mutant("Megatron partial outputs not summed", "func_impl.cpp",
           "mp_comm.allreduce(out, total, Op::Sum);", "mp_comm.allreduce(out, total, Op::Max);", ("part4",)),
    Mutant("naive gather without reordering the column blocks", "func_impl.cpp",
           "return gather_column_blocks(x, mp_comm, mp_size, \"naive_collect_forward_input\");",
           "Matrix all(x.rows(), x.cols() * mp_size); mp_comm.allgather(x, all); return all;",
           ("part3",)),
    Mutant("gradients summed instead of averaged", "func_impl.cpp",
           "  sum_w *= share;\n  sum_b *= share;", "  (void)share;", ("part7",)),
    Mutant("mp and dp communicators swapped", "func_impl.cpp",
           "Communicator mp_comm = comm.split(dp_idx, mp_idx);", "Communicator mp_comm = comm.split(mp_idx, dp_idx);",
           ("part2",)),
    Mutant("full weight cached in a static between calls", "zero_dp_stage3.cpp",
           "  const Vector w = gather_flat(comm, w_shard);\n  const Vector b = gather_flat(comm, b_shard);",
           "  static Vector w;\n  w = gather_flat(comm, w_shard);\n  const Vector b = gather_flat(comm, b_shard);",
           # Part 9's training runs this forward too, but judges learning, not memory.
           ("part8_forward",), zero=("part8_forward",),
           says=(r"forward\(\) call 1 kept \d+ bytes in 1 block that it allocated and did not free",)),
    Mutant("full weight kept in the w_shard member between calls", "zero_dp_stage3.cpp",
           "  const Vector w = gather_flat(comm, w_shard);\n  const Vector b = gather_flat(comm, b_shard);",
           "  if (w_shard.size() == w_shard_size) w_shard = gather_flat(comm, w_shard);\n"
           "  const Vector& w = w_shard;\n  const Vector b = gather_flat(comm, b_shard);",
           ("part8_forward", "part9"), zero=("part8_forward",),
           says=(r"bytes lie past w_shard in its block of \d+ bytes, where its shape needs \d+",)),
    Mutant("full weight held by a shared_ptr elsewhere", "zero_dp_stage3.cpp",
           "  const Vector w = gather_flat(comm, w_shard);\n  const Vector b = gather_flat(comm, b_shard);",
           "  static std::shared_ptr<Vector> held;\n  held = std::make_shared<Vector>(gather_flat(comm, w_shard));\n"
           "  const Vector& w = *held;\n  const Vector b = gather_flat(comm, b_shard);",
           ("part8_forward",), zero=("part8_forward",),
           says=(r"forward\(\) call 1 kept \d+ bytes in \d+ blocks? that it allocated and did not free",)),
    Mutant("backward all-gathers the bias too", "zero_dp_stage3.cpp",
           "  const Vector w = gather_flat(comm, w_shard);\n  Matrix grad_x;",
           "  const Vector w = gather_flat(comm, w_shard);\n  const Vector unused_b = gather_flat(comm, b_shard);\n"
           "  Matrix grad_x;",
           ("part8_backward", "part9"),
           says=(r"backward: all-gather of 2 elements on comm that ZeRO-3's backward doesn't need "
                 r"\(the bias isn't used to compute gradients\)",)),
    # Correct ways to write the ZeRO layer that the memory rule and the
    # traffic checks must accept: every part keeps its points.
    Mutant("correct: reduce-scatter into a temporary, then move it into the shard", "zero_dp_stage3.cpp",
           "  grad_w_shard.resize(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);",
           "  Vector mine(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, mine, Op::Sum);\n"
           "  grad_w_shard = std::move(mine);", ()),
    Mutant("correct: reduce-scatter into a temporary, then copy it into the shard", "zero_dp_stage3.cpp",
           "  grad_w_shard.resize(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);",
           "  Vector mine(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, mine, Op::Sum);\n"
           "  grad_w_shard = mine;", ()),
    Mutant("correct: Eigen's products and temporaries of the full weight and the gradients", "zero_dp_stage3.cpp",
           "  Matrix grad_x;  // (B, Din)\n"
           "  gemm(output_grad, false, as_matrix(w, in_dim, out_dim), true, grad_x);\n\n"
           "  PaddedGradient grad_w(w_shard_size, dp_size, in_dim, out_dim);\n"
           "  gemm(x, true, output_grad, false, grad_w.full);",
           "  const Matrix full_w = as_matrix(w, in_dim, out_dim);\n"
           "  const Matrix grad_x = output_grad * full_w.transpose();\n\n"
           "  const Matrix full_grad_w = x.transpose() * output_grad;\n"
           "  PaddedGradient grad_w(w_shard_size, dp_size, in_dim, out_dim);\n"
           "  grad_w.flat.head(full_grad_w.size()) = Eigen::Map<const Vector>(full_grad_w.data(), full_grad_w.size());",
           ()),
    Mutant("correct: std::vector buffers seen through Eigen maps", "zero_dp_stage3.cpp",
           "  const Vector w = gather_flat(comm, w_shard);\n  Matrix grad_x;",
           "  std::vector<double> buffer(static_cast<size_t>(w_shard.size() * comm.size()));\n"
           "  Eigen::Map<Vector> gathered(buffer.data(), static_cast<Eigen::Index>(buffer.size()));\n"
           "  Vector staged = w_shard;\n  Vector w(gathered.size());\n  comm.allgather(staged, w);\n"
           "  gathered = w;\n  Matrix grad_x;", ()),
    Mutant("partition without padding", "zero_dp_stage3.cpp",
           "const Eigen::Index size = (numel + num_shards - 1) / num_shards;",
           "const Eigen::Index size = numel / num_shards;", ("part8_forward",)),
    Mutant("reduce-scatter averages instead of summing", "zero_dp_stage3.cpp",
           "comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);",
           "comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum); grad_w_shard /= comm.size();",
           # Part 9's training runs this backward: the judge sees its gradients there too
           # (Adam's near scale-invariance once hid them behind a good accuracy).
           ("part8_backward", "part9"), says=(r"backward.grad_w_shard differs at",)),
    Mutant("backward adds to the gradient shards instead of setting them", "zero_dp_stage3.cpp",
           "  grad_w_shard.resize(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);",
           "  Vector fresh(w_shard_size);\n  comm.reduce_scatter(grad_w.flat, fresh, Op::Sum);\n"
           "  if (grad_w_shard.size() != w_shard_size) grad_w_shard = Vector::Zero(w_shard_size);\n"
           "  grad_w_shard += fresh;", ("part8_backward",),
           says=("a second backward must overwrite grad_w_shard",)),
    # Messages a student must be able to act on.
    Mutant("Adam with eps inside the square root", "zero_dp_stage3.cpp",
           "((moments.v.array() * v_scale).sqrt() + opt.eps)", "((moments.v.array() * v_scale + opt.eps).sqrt())",
           ("part9",), says=(r"expected -?[\d.e-]+, got -?[\d.e-]+ \(difference -?[\d.e-]+, tolerance [\d.e-]+\)",)),
    Mutant("naive gather into a destination one column short", "func_impl.cpp",
           "  Matrix joined(block.rows(), block.cols() * parts);",
           "  Matrix joined(block.rows(), block.cols() * parts - 1);", ("part3",),
           says=(r"Eigen check failed in naive_collect_forward_(in|out)put \(called with (x|out) \(\d+, \d+\)\) "
                 r"at student/func_impl\.cpp:\d+: "
                 r"a block \(block, middleRows, middleCols, \.\.\.\) that reaches outside the matrix",)),
    Mutant("Adam without bias correction", "zero_dp_stage3.cpp",
           "const double m_scale = 1.0 / (1.0 - std::pow(opt.beta1, t));\n  const double v_scale = 1.0 / (1.0 - std::pow(opt.beta2, t));",
           "const double m_scale = 1.0 + 0 * t;\n  const double v_scale = 1.0;", ("part9",)),
    Mutant("Adam that never updates", "zero_dp_stage3.cpp",
           "param.array() -= opt.lr *", "param.array() -= 0.0 * opt.lr *", ("part9",)),
]

# Each held extension part's own, after the base parts' (the table's order, kit/part_table.py).
for _part in TABLE:
    if _part.extension and os.path.exists(os.path.join(os.path.dirname(__file__), "part_mutants", f"{_part.key}.py")):
        MUTANTS += importlib.import_module(f"staff.part_mutants.{_part.key}").MUTANTS
