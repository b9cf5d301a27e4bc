// pipeline_stage.cpp: the framework's PipelineStage (pipeline_parallel.h):
// one fully connected layer of a K-layer MLP, run one micro-batch at a
// time, with a stash per micro-batch in flight and a record of its calls
// (pipeline_runtime.h), which the tests and the trainer read.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "comm_runtime.h"
#include "layers.h"
#include "pipeline_runtime.h"

namespace dtrain {

struct PipelineStage::State {
  Matrix w, b;            // (in_dim, out_dim), (1, out_dim)
  Matrix grad_w, grad_b;  // the same shapes, summed over the step's micro-batches
  Matrix x;               // (B, in_dim): stage 0 reads its micro-batches from it
  Labels y;               // (B): the last stage's loss
  int micro_batches = 1;
  struct Stash {
    Matrix input;  // (rows(mb), in_dim): what the weights saw
    Matrix z;      // (rows(mb), out_dim): before the ReLU (the last stage: the logits)
  };
  std::map<int, Stash> stashes;  // by micro-batch
  std::vector<std::string> calls;
  int peak_stashes = 0;
  std::uint64_t stash_bytes = 0, peak_stash_bytes = 0;
  double loss_sum = 0;  // the last stage: -log p(label), summed over the rows so far
  long correct = 0;
  // A stand-in for a stage another process holds (PipelineAccess::stand_in):
  // forward and backward run there, so that their order is that process's to see.
  std::function<Matrix(int, const Matrix&)> forward_there, backward_there;
};

namespace {

std::uint64_t bytes_of(const Matrix& m) { return static_cast<std::uint64_t>(m.size()) * sizeof(double); }

std::string where(const PipelineStage& s, const char* call, int mb) {
  return std::string(call) + "(" + std::to_string(mb) + ") on stage " + std::to_string(s.stage) + " of " +
         std::to_string(s.num_stages);
}

std::string shape(const Matrix& m) { return "(" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + ")"; }

}  // namespace

PipelineStage::PipelineStage(int stage_, int num_stages_, int in_dim_, int out_dim_, std::unique_ptr<State> state)
    : stage(stage_), num_stages(num_stages_), in_dim(in_dim_), out_dim(out_dim_), state_(std::move(state)) {}
PipelineStage::PipelineStage(PipelineStage&&) noexcept = default;
PipelineStage::~PipelineStage() = default;

int PipelineStage::micro_batches() const { return state_->micro_batches; }

int PipelineStage::rows(int mb) const {
  const int batch = static_cast<int>(state_->y.size()), m = state_->micro_batches;
  if (mb < 0 || mb >= m)
    throw std::out_of_range("rows(" + std::to_string(mb) + "): micro-batches are 0.." + std::to_string(m - 1));
  return batch / m + (mb < batch % m ? 1 : 0);
}

// The first row of micro-batch mb in the batch.
static int first_row(const PipelineStage& s, int mb) {
  int first = 0;
  for (int i = 0; i < mb; ++i) first += s.rows(i);
  return first;
}

Matrix PipelineStage::forward(int mb, const Matrix& x) {
  if (state_->forward_there) return state_->forward_there(mb, x);
  const ledger::Phase phase("forward");  // the trace's and the bubble measurement's span
  State& st = *state_;
  const int n = rows(mb);
  if (st.stashes.count(mb))
    throw std::logic_error(where(*this, "forward", mb) + ": micro-batch " + std::to_string(mb) +
                           " is already in flight (its forward ran, its backward has not)");
  Matrix input;  // (n, in_dim)
  if (stage == 0) {
    input = st.x.middleRows(first_row(*this, mb), n);
  } else if (x.rows() != n || x.cols() != in_dim) {
    throw std::invalid_argument(where(*this, "forward", mb) + ": x must be (" + std::to_string(n) + ", " +
                                std::to_string(in_dim) + "), the activation of stage " + std::to_string(stage - 1) +
                                ", got " + shape(x));
  } else {
    input = x;
  }
  Matrix z = input * st.w;  // (n, out_dim)
  z.rowwise() += st.b.row(0);
  const bool last = stage == num_stages - 1;
  Matrix out = last ? z : Matrix(z.cwiseMax(0.0));
  st.calls.push_back("F" + std::to_string(mb));
  st.stash_bytes += bytes_of(input) + bytes_of(z);
  st.stashes[mb] = {std::move(input), std::move(z)};
  st.peak_stashes = std::max(st.peak_stashes, static_cast<int>(st.stashes.size()));
  st.peak_stash_bytes = std::max(st.peak_stash_bytes, st.stash_bytes);
  return out;
}

Matrix PipelineStage::backward(int mb, const Matrix& grad_out) {
  if (state_->backward_there) return state_->backward_there(mb, grad_out);
  const ledger::Phase phase("backward");
  State& st = *state_;
  const int n = rows(mb);
  const auto found = st.stashes.find(mb);
  if (found == st.stashes.end())
    throw std::logic_error(where(*this, "backward", mb) + ": micro-batch " + std::to_string(mb) +
                           " has no stash: its forward has not run on this stage, or its backward already did");
  State::Stash stash = std::move(found->second);
  st.stashes.erase(found);
  st.stash_bytes -= bytes_of(stash.input) + bytes_of(stash.z);
  const bool last = stage == num_stages - 1;
  Matrix dz;  // (n, out_dim): the gradient before this layer's ReLU (the last stage: of the logits)
  if (last) {
    if (grad_out.size() != 0)
      throw std::invalid_argument(where(*this, "backward", mb) + ": the last stage computes its own loss gradient; "
                                  "pass an empty Matrix, got " + shape(grad_out));
    const double batch = static_cast<double>(st.y.size());
    const int first = first_row(*this, mb);
    dz = stash.z;
    for (int i = 0; i < n; ++i) {
      const double top = dz.row(i).maxCoeff();
      dz.row(i) = (dz.row(i).array() - top).exp().matrix();
      const double total = dz.row(i).sum();
      dz.row(i) /= total;
      const int label = st.y(first + i);
      Eigen::Index best = 0;
      stash.z.row(i).maxCoeff(&best);
      st.correct += best == label ? 1 : 0;
      st.loss_sum -= std::log(std::max(dz(i, label), 1e-300));
      dz(i, label) -= 1.0;
    }
    dz /= batch;  // the mean over the whole batch: the micro-batches' gradients add up to the batch's
  } else {
    if (grad_out.rows() != n || grad_out.cols() != out_dim)
      throw std::invalid_argument(where(*this, "backward", mb) + ": grad_out must be (" + std::to_string(n) + ", " +
                                  std::to_string(out_dim) + "), the gradient from stage " +
                                  std::to_string(stage + 1) + ", got " + shape(grad_out));
    dz = grad_out.cwiseProduct(Matrix((stash.z.array() > 0.0).cast<double>()));
  }
  st.grad_w += stash.input.transpose() * dz;
  st.grad_b += dz.colwise().sum();
  st.calls.push_back("B" + std::to_string(mb));
  return dz * st.w.transpose();  // (n, in_dim)
}

std::vector<int> pipeline_dims(int stages) {
  std::vector<int> dims{kFeatures};
  for (int k = 1; k < stages; ++k) dims.push_back(kHidden);
  dims.push_back(kClasses);
  return dims;
}

PipelineWeights pipeline_weights(const std::vector<int>& dims, std::uint64_t seed) {
  LayerWeights drawn = mlp_weights(dims, seed);
  return {dims, std::move(drawn.w), std::move(drawn.b)};
}

PipelineStage PipelineAccess::make(int stage, const PipelineWeights& weights, const Matrix& x, const Labels& y,
                                   int micro_batches) {
  const int k = static_cast<int>(weights.w.size());
  if (stage < 0 || stage >= k)
    throw std::invalid_argument("a pipeline of " + std::to_string(k) + " layers has no stage " + std::to_string(stage));
  if (micro_batches < 1 || micro_batches > y.size())
    throw std::invalid_argument("a batch of " + std::to_string(y.size()) + " rows cannot be cut into " +
                                std::to_string(micro_batches) + " micro-batches");
  auto state = std::make_unique<PipelineStage::State>();
  state->w = weights.w[static_cast<size_t>(stage)];
  state->b = weights.b[static_cast<size_t>(stage)];
  state->micro_batches = micro_batches;
  PipelineStage s(stage, k, weights.dims[static_cast<size_t>(stage)], weights.dims[static_cast<size_t>(stage) + 1],
                  std::move(state));
  next_batch(s, x, y);
  return s;
}

PipelineStage PipelineAccess::stand_in(const StageShape& shape, std::function<Matrix(int, const Matrix&)> forward,
                                       std::function<Matrix(int, const Matrix&)> backward) {
  if (shape.stage < 0 || shape.stage >= shape.num_stages || shape.micro_batches < 1 ||
      shape.micro_batches > shape.batch_rows || shape.in_dim < 1 || shape.out_dim < 1)
    throw std::invalid_argument("a pipeline stage's shape out of range");
  auto state = std::make_unique<PipelineStage::State>();
  state->micro_batches = shape.micro_batches;
  state->y = Labels::Zero(shape.batch_rows);  // its size alone: rows(mb) reads it
  state->forward_there = std::move(forward);
  state->backward_there = std::move(backward);
  return PipelineStage(shape.stage, shape.num_stages, shape.in_dim, shape.out_dim, std::move(state));
}

StageShape PipelineAccess::shape(const PipelineStage& s) {
  return {s.stage, s.num_stages, s.in_dim, s.out_dim, s.micro_batches(), static_cast<int>(s.state_->y.size())};
}

void PipelineAccess::next_batch(PipelineStage& s, const Matrix& x, const Labels& y) {
  PipelineStage::State& st = *s.state_;
  if (!st.stashes.empty())
    throw std::logic_error("stage " + std::to_string(s.stage) + " still holds " + std::to_string(st.stashes.size()) +
                           " stash(es) of the last step: a forward without its backward");
  if (s.stage == 0) st.x = x;
  st.y = y;
  st.grad_w = Matrix::Zero(st.w.rows(), st.w.cols());
  st.grad_b = Matrix::Zero(1, st.w.cols());
  st.calls.clear();
  st.peak_stashes = 0;
  st.peak_stash_bytes = st.stash_bytes = 0;
  st.loss_sum = 0;
  st.correct = 0;
}

const Matrix& PipelineAccess::grad_w(const PipelineStage& s) { return s.state_->grad_w; }
void PipelineAccess::take_gradients(PipelineStage& s, Matrix& w, Matrix& b) {
  w = std::move(s.state_->grad_w);
  b = std::move(s.state_->grad_b);
}
const Matrix& PipelineAccess::grad_b(const PipelineStage& s) { return s.state_->grad_b; }
Matrix& PipelineAccess::w(PipelineStage& s) { return s.state_->w; }
Matrix& PipelineAccess::b(PipelineStage& s) { return s.state_->b; }
const std::vector<std::string>& PipelineAccess::calls(const PipelineStage& s) { return s.state_->calls; }
int PipelineAccess::peak_stashes(const PipelineStage& s) { return s.state_->peak_stashes; }
std::uint64_t PipelineAccess::peak_stash_bytes(const PipelineStage& s) { return s.state_->peak_stash_bytes; }
int PipelineAccess::stashes(const PipelineStage& s) { return static_cast<int>(s.state_->stashes.size()); }
double PipelineAccess::loss(const PipelineStage& s) { return s.state_->loss_sum / static_cast<double>(s.state_->y.size()); }
long PipelineAccess::correct(const PipelineStage& s) { return s.state_->correct; }

// The model whole: every stage's layer on the whole batch, one after another,
// through the same PipelineStage code with one micro-batch and no messages.
// The weights are the function's own, each layer's let go once its stage
// holds a copy; each stage's gradients move out as its backward ends, and
// the stage goes: the driven harness computes this in its share of the
// rank's memory.
SequentialGradients sequential_gradients(PipelineWeights weights, const Matrix& x, const Labels& y) {
  const int k = static_cast<int>(weights.w.size());
  std::vector<PipelineStage> stages;
  for (int s = 0; s < k; ++s) {
    stages.push_back(PipelineAccess::make(s, weights, x, y, 1));
    weights.w[static_cast<size_t>(s)].resize(0, 0);  // the stage holds its copy
  }
  Matrix a = x;
  for (auto& s : stages) a = s.forward(0, a);
  SequentialGradients out;
  out.w.resize(static_cast<size_t>(k));
  out.b.resize(static_cast<size_t>(k));
  Matrix g;
  for (int s = k - 1; s >= 0; --s) {
    PipelineStage& stage = stages[static_cast<size_t>(s)];
    g = stage.backward(0, g);
    if (s == k - 1) out.loss = PipelineAccess::loss(stage);  // its backward adds the batch's loss
    PipelineAccess::take_gradients(stage, out.w[static_cast<size_t>(s)], out.b[static_cast<size_t>(s)]);
    stages.pop_back();
  }
  return out;
}

}  // namespace dtrain
