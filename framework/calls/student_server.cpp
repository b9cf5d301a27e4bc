// student_server.cpp: the student's process of the driven mode (driven.h):
// the student's files and the framework they call, and nothing of the
// harness. It carries out the calls its rank's side hands it, and ends
// when the side hands it none.
//   KIT_STUDENT_PROGRAM=build/reference/student_server tools/kitrun -n 4 build/driven_calls_demo
#include "data_parallel_preprocess.h"
#include "driven.h"
#include "func_impl.h"
#include "zero_dp_stage3.h"

int main() {
  using namespace dtrain;
  using calls::served;
  return calls::serve_calls({
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
  });
}
