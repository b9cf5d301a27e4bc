// student_functions.cpp: the student functions a driven harness may call
// (driven.h), each by the name the harness and the side's account use.
#include "data_parallel_preprocess.h"
#include "driven.h"
#include "func_impl.h"
#include "zero_dp_stage3.h"

namespace dtrain::calls {

std::vector<Served> student_functions() {
  std::vector<Served> out = {
      served<&split_data>("split_data"),
      served<&get_info>("get_info"),
      served<&naive_collect_forward_input>("naive_collect_forward_input"),
      served<&naive_collect_forward_output>("naive_collect_forward_output"),
      served<&megatron_collect_forward_input>("megatron_collect_forward_input"),
      served<&megatron_collect_forward_output>("megatron_collect_forward_output"),
      served<&naive_collect_backward_output>("naive_collect_backward_output"),
      served<&naive_collect_backward_x>("naive_collect_backward_x"),
      served<&megatron_collect_backward_output>("megatron_collect_backward_output"),
      served<&megatron_collect_backward_x>("megatron_collect_backward_x"),
      served<&collect_weight_grad>("collect_weight_grad"),
      served<&ZeroDPStage3FCLayer::partition_flat_tensor>("partition_flat_tensor"),
      served<&drop_objects>(kEndOfCase),
  };
  for (const Served& s : registered()) out.push_back(s);
  return out;
}

}  // namespace dtrain::calls
