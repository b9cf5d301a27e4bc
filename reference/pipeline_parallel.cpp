// Part 12, the reference: one pipeline step under GPipe or 1F1B.
#include "pipeline_parallel.h"

#include <algorithm>

namespace dtrain {

namespace {

// The sends and receives around a stage's calls. Where a stage must send to
// a neighbour and then receive from the same one, it does both in one
// sendrecv: with synchronous sends, two neighbours that both send first
// would wait for each other forever.
struct Links {
  PipelineStage& stage;
  Communicator& comm;
  bool first() const { return stage.stage == 0; }
  bool last() const { return stage.stage == stage.num_stages - 1; }

  Matrix recv_activation(int mb) {  // before forward(mb): from stage-1
    Matrix x;
    if (first()) return x;
    x.resize(stage.rows(mb), stage.in_dim);
    comm.recv(x, stage.stage - 1, mb);
    return x;
  }
  void send_activation(const Matrix& y, int mb) {  // after forward(mb): to stage+1
    if (!last()) comm.send(y, stage.stage + 1, mb);
  }
  Matrix recv_gradient(int mb) {  // before backward(mb): from stage+1
    Matrix g;
    if (last()) return g;
    g.resize(stage.rows(mb), stage.out_dim);
    comm.recv(g, stage.stage + 1, mb);
    return g;
  }
  void send_gradient(const Matrix& gx, int mb) {  // after backward(mb): to stage-1
    if (!first()) comm.send(gx, stage.stage - 1, mb);
  }
  // forward's result out to stage+1, backward mb's gradient in from it.
  Matrix send_activation_recv_gradient(const Matrix& y, int sent_mb, int mb) {
    Matrix g;
    if (last()) return g;
    g.resize(stage.rows(mb), stage.out_dim);
    comm.sendrecv(y, stage.stage + 1, sent_mb, g, stage.stage + 1, mb);
    return g;
  }
  // backward's result out to stage-1, forward mb's activation in from it.
  Matrix send_gradient_recv_activation(const Matrix& gx, int sent_mb, int mb) {
    Matrix x;
    if (first()) return x;
    x.resize(stage.rows(mb), stage.in_dim);
    comm.sendrecv(gx, stage.stage - 1, sent_mb, x, stage.stage - 1, mb);
    return x;
  }
};

void gpipe(Links& l) {
  const int m = l.stage.micro_batches();
  for (int mb = 0; mb < m; ++mb) l.send_activation(l.stage.forward(mb, l.recv_activation(mb)), mb);
  for (int mb = 0; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);
}

void one_f_one_b(Links& l) {
  const int m = l.stage.micro_batches();
  const int warmup = std::min(l.stage.num_stages - l.stage.stage - 1, m);
  for (int mb = 0; mb < warmup; ++mb) l.send_activation(l.stage.forward(mb, l.recv_activation(mb)), mb);
  const int steady = m - warmup;
  Matrix x = steady > 0 ? l.recv_activation(warmup) : Matrix();
  for (int i = 0; i < steady; ++i) {
    const int f = warmup + i;
    const Matrix y = l.stage.forward(f, x);
    const Matrix gx = l.stage.backward(i, l.send_activation_recv_gradient(y, f, i));
    if (i + 1 < steady) {
      x = l.send_gradient_recv_activation(gx, i, f + 1);
    } else {
      l.send_gradient(gx, i);
    }
  }
  for (int mb = steady; mb < m; ++mb) l.send_gradient(l.stage.backward(mb, l.recv_gradient(mb)), mb);
}

}  // namespace

void pipeline_step(PipelineStage& stage, Communicator& comm, Schedule schedule) {
  Links links{stage, comm};
  if (schedule == Schedule::GPipe) {
    gpipe(links);
  } else {
    one_f_one_b(links);
  }
}

}  // namespace dtrain
