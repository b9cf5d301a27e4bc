"""Part 12's known bugs and correct variants (pipeline parallelism)."""
from staff.mutant_types import Mutant

MUTANTS = [
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
           loses=("part12_pipeline",), hangs=True,
           says=(r"ranks [\d >-]+: a cycle of sends", r"rank \d+: +waiting in send to rank \d+ \(tag \d+\)")),
    # Only GPipe's backwards: each case it hangs costs its whole limit.
    Mutant("GPipe sending each gradient with the next micro-batch's tag", "pipeline_parallel.cpp",
           "  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);\n}",
           "  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb + 1);\n}",
           ("part12_pipeline",), says=(r"rank \d+ sends to rank \d+ with tag \d+, but rank \d+ waits for tag \d+ from "
                                       r"rank \d+: the tags differ",), hangs=True),
]
