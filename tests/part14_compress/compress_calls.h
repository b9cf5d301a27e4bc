// compress_calls.h: Part 14's student functions, called as student_calls.h
// calls the others, so that the ledger and the messages name them, and the
// judge sees what they returned (observe.h): a Sparse as its indices and
// its values. In the driven harness each is a call of the student's process
// (KIT_STUDENT_CALL; compress_with_feedback in its form of compress_forms.h);
// in one process, the function itself.
#pragma once

#include <string>

#include "comm_runtime.h"
#include "compress.h"
#include "compress_forms.h"
#include "observe.h"
#include "student_calls.h"

namespace dtrain::student {

inline void observe_sparse(const std::string& function, const Sparse& s) {
  Vector index(static_cast<Eigen::Index>(s.index.size()));  // (K), as doubles
  for (std::size_t i = 0; i < s.index.size(); ++i) index(static_cast<Eigen::Index>(i)) = static_cast<double>(s.index[i]);
  observe(function + ".index", index);
  observe(function + ".value", s.value);
}

inline Sparse topk(const Vector& v, long k) {  // (N) -> K of N
  StudentScope scope("topk", nullptr, nullptr, {{"v", static_cast<long>(v.size()), 1}});
  Sparse s = KIT_STUDENT_CALL(topk, v, k);
  observe_sparse("topk", s);
  return s;
}

inline Sparse compress_with_feedback(ErrorFeedback& ef, const Vector& grad, long k) {  // residual (N), (N) -> K of N
  StudentScope scope("compress_with_feedback", nullptr, nullptr,
                     {{"ef.residual", static_cast<long>(ef.residual.size()), 1}, {"grad", static_cast<long>(grad.size()), 1}});
#ifdef KIT_DRIVEN
  auto [s, residual] = calls::remote<decltype(calls::compress::compress_with_feedback)>("compress_with_feedback",
                                                                                         ef.residual, grad, k);
  ef.residual = std::move(residual);
#else
  Sparse s = ::dtrain::compress_with_feedback(ef, grad, k);
#endif
  observe_sparse("compress_with_feedback", s);
  observe("compress_with_feedback.residual", ef.residual);
  return s;
}

inline Vector sparse_allreduce_mean(const Sparse& mine, Communicator& comm) {  // K of N -> (N)
  StudentScope scope("sparse_allreduce_mean", &comm, "comm", {{"mine.value", static_cast<long>(mine.value.size()), 1}});
  Vector mean = KIT_STUDENT_CALL(sparse_allreduce_mean, mine, comm);
  observe("sparse_allreduce_mean", mean);
  return mean;
}

}  // namespace dtrain::student
