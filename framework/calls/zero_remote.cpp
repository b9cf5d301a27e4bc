// zero_remote.cpp: the harness's end of zero_calls.h: each handle's method is
// one driven call, by the name the student's process serves it under.
#include "zero_calls.h"

namespace dtrain::calls::zero {

Matrix RemoteLayer::forward(const Matrix& x) { return remote<decltype(zero::forward)>("ZeroDPStage3FCLayer::forward", o_, x); }
Matrix RemoteLayer::backward(const Matrix& output_grad) {
  return remote<decltype(zero::backward)>("ZeroDPStage3FCLayer::backward", o_, output_grad);
}
void RemoteLayer::zero_grad() { remote<decltype(zero::zero_grad)>("ZeroDPStage3FCLayer::zero_grad", o_); }

#define KIT_ZERO_FIELD_REMOTE(TYPE, NAME)                                                                  \
  TYPE RemoteLayer::NAME() const { return remote<decltype(get_##NAME)>("ZeroDPStage3FCLayer." #NAME, o_); } \
  void RemoteLayer::set_##NAME(const TYPE& value) {                                                        \
    remote<decltype(zero::set_##NAME)>("ZeroDPStage3FCLayer." #NAME "=", o_, value);                       \
  }
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_REMOTE)
#undef KIT_ZERO_FIELD_REMOTE

RemoteLayer remote_layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, const Vector& w_shard,
                                     const Vector& b_shard) {
  return RemoteLayer(remote<decltype(layer_from_shards)>("ZeroDPStage3FCLayer::ZeroDPStage3FCLayer", comm, in_dim,
                                                         out_dim, dp_size, w_shard, b_shard));
}

RemoteLayer remote_layer_from_full(Communicator& comm, int in_dim, int out_dim, int dp_size, const Matrix& full_w,
                                   const Matrix& full_b) {
  return RemoteLayer(remote<decltype(layer_from_full)>("ZeroDPStage3FCLayer::ZeroDPStage3FCLayer(full)", comm, in_dim,
                                                       out_dim, dp_size, full_w, full_b));
}

RemoteAdam::RemoteAdam(const std::vector<RemoteLayer*>& layers, double lr, double beta1, double beta2, double eps) {
  std::vector<Object<Layer>> objects;
  for (const RemoteLayer* l : layers) objects.push_back(l->object());
  o_ = remote<decltype(adam)>("ZeroDPAdam::ZeroDPAdam", objects, lr, beta1, beta2, eps);
}

void RemoteAdam::step() { remote<decltype(zero::step)>("ZeroDPAdam::step", o_); }
int RemoteAdam::step_idx() const { return remote<decltype(zero::step_idx)>("ZeroDPAdam.step_idx", o_); }
std::vector<std::string> RemoteAdam::state_keys() const {
  return remote<decltype(zero::state_keys)>("ZeroDPAdam.state", o_);
}
Vector RemoteAdam::moment(const std::string& key, const std::string& which) const {
  return remote<decltype(zero::moment)>("ZeroDPAdam.state[]", o_, key, which);
}

}  // namespace dtrain::calls::zero
