// flat_mlp.h: the 784-256-10 MLP as the extension parts' trainers use it,
// its four parameters and their gradients as plain matrices, each of which
// a trainer can flatten into one vector for a student function
// (decentral_train, compress_train).
#pragma once

#include <cstdint>
#include <vector>

#include "layers.h"

namespace dtrain {

// The MLP, its four parameters and their gradients: W1 (784, 256), b1 (1, 256), W2 (256, 10), b2 (1, 10).
class Mlp {
 public:
  explicit Mlp(std::uint64_t seed) {
    LayerWeights drawn = mlp_weights({kFeatures, kHidden, kClasses}, seed);
    params_ = {drawn.w[0], drawn.b[0], drawn.w[1], drawn.b[1]};
    grads_.resize(params_.size());
  }

  double forward(const Matrix& x, const Labels& y) {  // (B, 784), (B) -> mean loss
    x_ = x;
    h_ = x * params_[0];  // (B, 256)
    h_.rowwise() += params_[1].row(0);
    a_ = h_.cwiseMax(0.0);
    Matrix logits = a_ * params_[2];  // (B, 10)
    logits.rowwise() += params_[3].row(0);
    return loss_.forward(logits, y);
  }
  double accuracy() const { return loss_.accuracy(); }

  void backward() {  // the gradients of the last forward's mean loss
    const Matrix& g = loss_.backward();  // (B, 10)
    grads_[2] = a_.transpose() * g;
    grads_[3] = g.colwise().sum();
    const Matrix gh = ((g * params_[2].transpose()).array() * (h_.array() > 0.0).cast<double>()).matrix();  // (B, 256)
    grads_[0] = x_.transpose() * gh;
    grads_[1] = gh.colwise().sum();
  }

  std::vector<Matrix>& params() { return params_; }
  std::vector<Matrix>& grads() { return grads_; }

 private:
  std::vector<Matrix> params_, grads_;
  Matrix x_, h_, a_;  // the last forward's input (B, 784), pre-activation and activation (B, 256)
  SoftmaxCrossEntropy loss_;
};

// A row-major matrix's storage as one vector, and back.
inline Vector flat(const Matrix& m) { return Eigen::Map<const Vector>(m.data(), m.size()); }
inline void unflat(const Vector& v, Matrix& m) { Eigen::Map<Vector>(m.data(), m.size()) = v; }

}  // namespace dtrain
