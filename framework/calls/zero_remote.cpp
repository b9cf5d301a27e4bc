// zero_remote.cpp: the harness's end of zero_calls.h: each handle's method is
// one driven call, by the name the student's process serves it under: a
// student call (remote) for the student's methods, the kit's own access
// (access) for what the in-process harness does without one: a field, a
// constructor, the framework's zero_grad.
#include "zero_calls.h"

#include <limits>

namespace dtrain::calls::zero {

Answer RemoteLayer::forward(const Matrix& x) { return remote<decltype(zero::forward)>("ZeroDPStage3FCLayer::forward", o_, x); }
Answer RemoteLayer::backward(const Matrix& output_grad) {
  return remote<decltype(zero::backward)>("ZeroDPStage3FCLayer::backward", o_, output_grad);
}
void RemoteLayer::zero_grad() { access<decltype(zero::zero_grad)>("ZeroDPStage3FCLayer::zero_grad", o_); }

#define KIT_ZERO_FIELD_REMOTE(TYPE, NAME)                                                                  \
  TYPE RemoteLayer::NAME() const { return access<decltype(get_##NAME)>("ZeroDPStage3FCLayer::get_" #NAME, o_); } \
  void RemoteLayer::set_##NAME(const TYPE& value) {                                                              \
    access<decltype(zero::set_##NAME)>("ZeroDPStage3FCLayer::set_" #NAME, o_, value);                            \
  }
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_REMOTE)
#undef KIT_ZERO_FIELD_REMOTE

RemoteLayer remote_layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, const Vector& w_shard,
                                     const Vector& b_shard) {
  return RemoteLayer(access<decltype(layer_from_shards)>("ZeroDPStage3FCLayer::ZeroDPStage3FCLayer", comm, in_dim,
                                                         out_dim, dp_size, w_shard, b_shard),
                     comm, in_dim, out_dim, dp_size);
}

RemoteLayer remote_layer_from_partition(Communicator& comm, int in_dim, int out_dim, int dp_size,
                                        const std::pair<Vector, int>& w, const std::pair<Vector, int>& b) {
  return RemoteLayer(access<decltype(layer_from_partition)>("ZeroDPStage3FCLayer::from_partition", comm, in_dim,
                                                            out_dim, dp_size, w.first, w.second, b.first, b.second),
                     comm, in_dim, out_dim, dp_size);
}

RemoteAdam::RemoteAdam(const std::vector<RemoteLayer*>& layers, double lr_, double beta1_, double beta2_, double eps_)
    : lr(lr_), beta1(beta1_), beta2(beta2_), eps(eps_), layers_(layers.size()) {
  std::vector<Object<Layer>> objects;
  for (const RemoteLayer* l : layers) objects.push_back(l->object());
  o_ = access<decltype(adam)>("ZeroDPAdam::ZeroDPAdam", objects, lr, beta1, beta2, eps);
}

std::vector<Vector> RemoteAdam::step() {
  const double given = lr_set_ ? lr : std::numeric_limits<double>::quiet_NaN();
  lr_set_ = false;
  return remote<decltype(zero::step)>("ZeroDPAdam::step", o_, given);
}
int RemoteAdam::step_idx() const { return access<decltype(zero::step_idx)>("ZeroDPAdam::get_step_idx", o_); }
std::vector<std::string> RemoteAdam::state_keys() const {
  return access<decltype(zero::state_keys)>("ZeroDPAdam::state_keys", o_);
}
Vector RemoteAdam::moment(const std::string& key, const std::string& which) const {
  return access<decltype(zero::moment)>("ZeroDPAdam::state_moment", o_, key, which);
}

}  // namespace dtrain::calls::zero
