// plain_layers.cpp: the parts of layers.h that call no student code: the
// initial weights, ReLU and the loss. Apart from layers.cpp so that a
// program without a handin (the driven harness, which trains Part 9's
// model through the student's process) links them alone.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "layers.h"
#include "random.h"

namespace dtrain {

LayerWeights mlp_weights(const std::vector<int>& dims, std::uint64_t seed) {
  if (dims.size() < 2) throw std::invalid_argument("mlp_weights: a model needs at least 2 sizes");
  Rng rng(seed);
  LayerWeights weights;
  for (size_t k = 0; k + 1 < dims.size(); ++k) {
    weights.w.push_back(rng.normal_matrix(dims[k], dims[k + 1], 1.0 / std::sqrt(static_cast<double>(dims[k]))));
    weights.b.push_back(Matrix::Zero(1, dims[k + 1]));
  }
  return weights;
}

FullWeights initial_weights(std::uint64_t seed) {
  LayerWeights drawn = mlp_weights({kFeatures, kHidden, kClasses}, seed);
  return {std::move(drawn.w[0]), std::move(drawn.b[0]), std::move(drawn.w[1]), std::move(drawn.b[1])};
}

const Matrix& ReLULayer::forward(const Matrix& x) {
  out_ = x.cwiseMax(0.0);
  return out_;
}

const Matrix& ReLULayer::backward(const Matrix& output_grad) {
  if (output_grad.rows() != out_.rows() || output_grad.cols() != out_.cols())
    throw std::invalid_argument("ReLU backward: the gradient is (" + std::to_string(output_grad.rows()) + ", " +
                                std::to_string(output_grad.cols()) + "), the forward's output (" +
                                std::to_string(out_.rows()) + ", " + std::to_string(out_.cols()) + ")");
  grad_x_.resize(out_.rows(), out_.cols());
  // Both read on every element, so the compiler makes the choice a vector
  // mask; Eigen's select branched on each one, wrong half the time (4% of a
  // one-rank epoch).
  const double* out = out_.data();
  const double* grad = output_grad.data();
  double* into = grad_x_.data();
  for (Eigen::Index i = 0; i < out_.size(); ++i) {
    const double g = grad[i];
    into[i] = out[i] > 0.0 ? g : 0.0;
  }
  return grad_x_;
}

double SoftmaxCrossEntropy::forward(const Matrix& logits, const Labels& labels) {
  if (labels.size() != logits.rows())
    throw std::invalid_argument("loss: expected " + std::to_string(logits.rows()) + " labels, got " +
                                std::to_string(labels.size()));
  labels_ = labels;
  probs_ = logits;
  probs_.colwise() -= probs_.rowwise().maxCoeff();  // shift for a stable exp
  probs_ = probs_.array().exp();
  probs_.array().colwise() /= probs_.rowwise().sum().array();
  double loss = 0.0;
  for (Eigen::Index i = 0; i < probs_.rows(); ++i) loss -= std::log(std::max(probs_(i, labels_(i)), 1e-300));
  return probs_.rows() > 0 ? loss / static_cast<double>(probs_.rows()) : 0.0;
}

const Matrix& SoftmaxCrossEntropy::backward() {
  grad_ = probs_;
  for (Eigen::Index i = 0; i < grad_.rows(); ++i) grad_(i, labels_(i)) -= 1.0;
  if (grad_.rows() > 0) grad_ /= static_cast<double>(grad_.rows());
  return grad_;
}

double SoftmaxCrossEntropy::accuracy() const {
  if (probs_.rows() == 0) return 0.0;
  int correct = 0;
  for (Eigen::Index i = 0; i < probs_.rows(); ++i) {
    Eigen::Index best = 0;
    probs_.row(i).maxCoeff(&best);
    correct += best == labels_(i);
  }
  return static_cast<double>(correct) / static_cast<double>(probs_.rows());
}

}  // namespace dtrain
