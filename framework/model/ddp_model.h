// ddp_model.h: Part 13's model, for its trainer (programs/part13_ddp/ddp_train.cpp): an
// MLP of K hidden layers whose backward hands each parameter's gradient over
// the moment it is final, last parameter first, as DDP's hooks hand theirs
// to its buckets. Student code never includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "layers.h"
#include "tensor.h"

namespace dtrain {

// The sizes of the MLP with `hidden_layers` hidden layers of `width`: 784,
// width, ..., width, 10.
std::vector<int> ddp_dims(int hidden_layers, int width);

class DdpModel {
 public:
  DdpModel(const std::vector<int>& dims, std::uint64_t seed);

  // The parameters in the order of the layers: W1, b1, W2, b2, ... (P = 2 K + 2).
  std::vector<long> param_elems() const;
  int layers() const { return static_cast<int>(w_.size()); }

  double forward(const Matrix& x, const Labels& y);  // (B, 784), (B) -> mean loss; accuracy() after
  double accuracy() const { return loss_.accuracy(); }

  // How backward hands the gradients over.
  struct HandOver {
    bool at_once = true;    // each the moment it is final; false: all of them after the last layer
    bool progress = true;   // between layers, test the requests in flight (CommAccess::progress)
  };
  // Computes every parameter's gradient into grads(), the last layer first,
  // and calls ready(p, grads()[p]) for p = P-1 down to 0. Each layer's
  // computing is a span "backward" of the ledger, so the trace and the
  // overlap measurement see when backward computes and when it hands over.
  void backward(const std::function<void(int, const Vector&)>& ready, const HandOver& how);

  std::vector<Vector>& grads() { return grads_; }  // (P): parameter p's gradient, flat (a W row-major)
  std::vector<Vector*> grad_pointers();
  void sgd_step(double lr);

 private:
  std::vector<Matrix> w_, b_;      // layer k: (dims[k], dims[k+1]), (1, dims[k+1])
  std::vector<Matrix> inputs_;     // layer k's input in the last forward: (B, dims[k])
  std::vector<Matrix> outputs_;    // layer k's output after its ReLU (the last: the logits): (B, dims[k+1])
  std::vector<Vector> grads_;      // (P)
  SoftmaxCrossEntropy loss_;
};

}  // namespace dtrain
