"""Part 13's known bugs and correct variants (gradient buckets and overlap)."""
from staff.mutant_types import Mutant

MUTANTS = [
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
