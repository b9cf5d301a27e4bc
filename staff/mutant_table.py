"""The known bugs and the correct variants that staff/mutants.py checks:
each names a student file, a piece of the reference's text and its
replacement, the parts it must cost and the messages it must give. The
grader's and the staff's tests take bugs from here too.

  python3 -m staff.mutants      (runs them; this file is only the table)
"""
from typing import List, NamedTuple, Tuple

from kit.parts import RANK_HEAP_BUDGET_MIB


WRONG_ANSWERS_FROM = "data split by rank instead of by data-parallel group"  # the first of the list's second half


class Mutant(NamedTuple):
    name: str
    file: str
    find: str
    replace: str
    loses: Tuple[str, ...]    # parts that must lose points
    zero: Tuple[str, ...] = ()  # of those, parts that must score exactly 0
    says: Tuple[str, ...] = ()  # regular expressions each rank's first failure messages must match (what a report shows first)
    hangs: bool = False         # hangs case after case: run at kit.parts.HANG_SHARE of the limits


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
           ("part8_forward", "part9"), zero=("part8_forward",),
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
           ("part8_forward", "part9"), zero=("part8_forward",),
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
    # The extension parts (checked whether or not the course grades them).
    Mutant("ring with a wrong block order", "ring_collectives.cpp",
           "const int out = wrap(r - s), in = wrap(r - s - 1);", "const int out = wrap(r + s), in = wrap(r - s - 1);",
           ("part11_ring",)),
    Mutant("ring without its all-gather phase", "ring_collectives.cpp",
           "  for (int s = 0; s < n - 1; ++s) {\n    const int out = wrap(r + 1 - s)",
           "  for (int s = 0; s < 0; ++s) {\n    const int out = wrap(r + 1 - s)", ("part11_ring",)),
    Mutant("naive allreduce that skips rank 0's own buffer", "ring_collectives.cpp",
           "  sum = src;\n", "  sum.setZero();\n", ("part11_ring",)),
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
                 r"elements, the first [-\d.e]+\), where it makes two",)),
    Mutant("the sparse mean gathering the values first (the right values, in another order)", "compression.cpp",
           "  comm.allgather(index, all_index);\n  comm.allgather(mine.value, all_value);",
           "  comm.allgather(mine.value, all_value);\n  comm.allgather(index, all_index);",
           ("part14_compress",),
           says=(r"sparse_allreduce_mean on rank \d of [24] \(K = 4 of N = 20\), call 1: allgather of 4 elements, the "
                 r"first \d+\.5, where the handout's gathers the indices",)),
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
    Mutant("bias correction one step off", "zero_stage12.cpp",
           "const double c1 = 1 - std::pow(a.beta1, a.step_idx)", "const double c1 = 1 - std::pow(a.beta1, a.step_idx + 1)",
           ("part16_zero12",)),
    Mutant("stage 1 that sums the gradients and never averages them", "zero_stage12.cpp",
           "g(i) = sum(first + i) / comm.size();", "g(i) = sum(first + i);", ("part16_zero12",)),
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
    Mutant("GPipe with its backwards in reverse order", "pipeline_parallel.cpp",
           "  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);\n}",
           "  for (int mb = m - 1; mb >= 0; --mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);\n}",
           ("part12_pipeline",), says=(r"stage \d+'s calls differ from the GPipe schedule's at position \d+: it ran "
                                       r"B\d+, the schedule runs B\d+ there\n +ran: +(\.\.\. )?[FB\d \[\]]+",)),
    Mutant("1F1B with one forward too many before the first backward", "pipeline_parallel.cpp",
           "std::min(l.stage.num_stages - l.stage.stage - 1, m)", "std::min(l.stage.num_stages - l.stage.stage, m)",
           ("part12_pipeline",)),
    Mutant("1F1B that stashes like GPipe", "pipeline_parallel.cpp",
           "    one_f_one_b(links);", "    gpipe(links);", ("part12_pipeline",),
           says=(r"stage \d+'s calls differ from the 1F1B schedule's at position \d+: it ran F\d+, the schedule runs B\d+ there",)),
    Mutant("1F1B that sends, then receives, with plain send and recv", "pipeline_parallel.cpp",
           "    comm.sendrecv(y, stage.stage + 1, sent_mb, g, stage.stage + 1, mb);\n    return g;\n  }\n"
           "  // backward's result out to stage-1, forward mb's activation in from it.\n"
           "  Matrix send_gradient_recv_activation(const Matrix& gx, int sent_mb, int mb) {\n"
           "    Matrix x;\n    if (first()) return x;\n    x.resize(stage.rows(mb), stage.in_dim);\n"
           "    comm.sendrecv(gx, stage.stage - 1, sent_mb, x, stage.stage - 1, mb);",
           "    comm.send(y, stage.stage + 1, sent_mb);\n    comm.recv(g, stage.stage + 1, mb);\n    return g;\n  }\n"
           "  Matrix send_gradient_recv_activation(const Matrix& gx, int sent_mb, int mb) {\n"
           "    Matrix x;\n    if (first()) return x;\n    x.resize(stage.rows(mb), stage.in_dim);\n"
           "    comm.send(gx, stage.stage - 1, sent_mb);\n    comm.recv(x, stage.stage - 1, mb);",
           ("part12_pipeline",), says=(r"ranks [\d >-]+: a cycle of sends",
                                       r"rank \d+: +waiting in send to rank \d+ \(tag \d+\)"), hangs=True),
    # Only GPipe's backwards: each case it hangs costs its whole limit.
    Mutant("GPipe sending each gradient with the next micro-batch's tag", "pipeline_parallel.cpp",
           "  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);\n}",
           "  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb + 1);\n}",
           ("part12_pipeline",), says=(r"rank \d+ sends to rank \d+ with tag \d+, but rank \d+ waits for tag \d+ from "
                                       r"rank \d+: the tags differ",), hangs=True),
    Mutant("buckets closed at the cap rather than past it", "ddp_buckets.cpp",
           "filled + n > cap_elems", "filled + n >= cap_elems", ("part13_ddp",),
           says=(r"plan_buckets\(sizes \{6, 2, 4, 2, 3, 1\}, cap 6\): bucket 0 holds parameters \{5, 4\}, "
                 r"expected \{5, 4, 3\}",
                 # The basic problems first, then the plan the object ran beside the one expected.
                 r"step 0: 5 iallreduce calls for 3 buckets \{5, 4, 3\}\{2, 1\}\{0\}: one per bucket\n"
                 r"bucket 0 \(parameters \{5, 4, 3\}\) holds 6 elements, but the iallreduce started for it in "
                 r"grad_ready\(4\) reduces 4",
                 r"\n  ran: +\{5, 4\} 4 elements in grad_ready\(4\); \{3\} 2 elements in grad_ready\(3\); "
                 r"\{2\} 4 elements in grad_ready\(2\)",
                 r"\n  expected: \{5, 4, 3\} 6 elements in grad_ready\(3\); \{2, 1\} 6 elements in grad_ready\(1\)")),
    Mutant("a blocking allreduce per bucket", "ddp_buckets.cpp",
           "b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);", "s.comm.allreduce(b.send, b.sum, Op::Sum);",
           ("part13_ddp",), says=(r"grad_ready\(\d+\) called allreduce on comm, a blocking collective",)),
    Mutant("a bucket started before all its gradients arrived", "ddp_buckets.cpp",
           "if (++b.arrived == b.params.size())", "if (++b.arrived == 1)", ("part13_ddp",),
           says=(r"bucket 0 \(parameters \{5, 4, 3\}\) started its iallreduce in grad_ready\(5\), before the "
                 r"gradients of parameters \{4, 3\} arrived",)),
    Mutant("every bucket reduced in finish (no overlap)", "ddp_buckets.cpp",
           "  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n}\n\n"
           "void GradientBuckets::finish(const std::vector<Vector*>& grads) {\n  State& s = *state;\n",
           "  ++b.arrived;\n}\n\nvoid GradientBuckets::finish(const std::vector<Vector*>& grads) {\n"
           "  State& s = *state;\n  for (State::Bucket& b : s.buckets) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n",
           ("part13_ddp",), says=(r"bucket 0 \(parameters \{5, 4, 3\}\) started its iallreduce in finish, after "
                                  r"backward had produced every gradient",)),
    Mutant("a loop of test() in grad_ready until its bucket completes", "ddp_buckets.cpp",
           "  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n",
           "  if (++b.arrived == b.params.size()) {\n    b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n"
           "    while (!b.request.test()) {\n    }\n  }\n", ("part13_ddp",),
           says=(r"grad_ready\((\d+)\) tested the iallreduce started in grad_ready\(\1\) \(bucket \d+\) \d+ times "
                 r"while it was still running, until it completed: a loop of test\(\) is a wait",)),
    Mutant("a wait() in grad_ready for the bucket it just started", "ddp_buckets.cpp",
           "  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n",
           "  if (++b.arrived == b.params.size()) {\n    b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n"
           "    b.request.wait();\n  }\n", ("part13_ddp",),
           says=(r"grad_ready\(3\) waited for the iallreduce started in grad_ready\(3\) \(bucket 0\): backward stops "
                 r"there until the allreduce ends",)),
    Mutant("an averaged gradient written back to the wrong parameter", "ddp_buckets.cpp",
           "const size_t p = static_cast<size_t>(b.params[i]);",
           "const size_t p = static_cast<size_t>(b.params[(i + 1) % b.params.size()]);", ("part13_ddp",),
           says=(r"parameter \d+'s averaged gradient \(grads\[\d+\]\) (has \d+ elements|differs at element)",)),
    Mutant("finish that never waits for the last bucket", "ddp_buckets.cpp",
           "    b.request.wait();\n", "    if (&b != &s.buckets.back()) b.request.wait();\n", ("part13_ddp",),
           says=(r"the iallreduce started in grad_ready\(0\) \(bucket \d+\) was not waited by the end of finish",)),
    Mutant("correct: every request tested in grad_ready, so that it moves on", "ddp_buckets.cpp",
           "  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n",
           "  if (++b.arrived == b.params.size()) b.request = s.comm.iallreduce(b.send, b.sum, Op::Sum);\n"
           "  for (State::Bucket& other : s.buckets) other.request.test();\n", ()),
    # In finish a request may be waited or tested in any order, as often as
    # one likes: whatever the timing, these keep every point.
    Mutant("correct: finish tests each request until it completes", "ddp_buckets.cpp",
           "    b.request.wait();\n", "    while (!b.request.test()) {\n    }\n", ()),
    Mutant("correct: finish averages each bucket as soon as test() says it is complete", "ddp_buckets.cpp",
           "  for (State::Bucket& b : s.buckets) {\n    b.request.wait();\n",
           "  std::vector<State::Bucket*> left;\n  for (State::Bucket& b : s.buckets) left.push_back(&b);\n"
           "  while (!left.empty()) {\n    State::Bucket& b = *left.front();\n    left.erase(left.begin());\n"
           "    if (!b.request.test()) {\n      left.push_back(&b);\n      continue;\n    }\n", ()),
    Mutant("correct: finish waits for the buckets in reverse order", "ddp_buckets.cpp",
           "  for (State::Bucket& b : s.buckets) {\n    b.request.wait();\n",
           "  for (auto it = s.buckets.rbegin(); it != s.buckets.rend(); ++it) {\n    State::Bucket& b = *it;\n"
           "    b.request.wait();\n", ()),
]
