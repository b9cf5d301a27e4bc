// decentral_calls.h: Part 15's student functions, called as student_calls.h
// calls the others, so that the ledger and the messages name them, and the
// judge sees what they left in the vector (observe.h). In the driven
// harness each is a call of the student's process, whose result is the
// updated vector (decentral_forms.h); in one process, the function itself.
#pragma once

#include "comm_runtime.h"
#include "decentral.h"
#include "decentral_forms.h"
#include "observe.h"
#include "student_calls.h"

namespace dtrain::student {

inline void gossip_mix(Vector& x, Communicator& comm) {  // (N), in place
  StudentScope scope("gossip_mix", &comm, "comm", {{"x", static_cast<long>(x.size()), 1}});
#ifdef KIT_DRIVEN
  x = calls::remote<decltype(calls::decentral::gossip_mix)>("gossip_mix", x, comm);
#else
  ::dtrain::gossip_mix(x, comm);
#endif
  observe("gossip_mix", x);
}

inline void decentralized_sgd_step(Vector& w, const Vector& grad, double lr, Communicator& comm) {  // (N), (N)
  StudentScope scope("decentralized_sgd_step", &comm, "comm",
                     {{"w", static_cast<long>(w.size()), 1}, {"grad", static_cast<long>(grad.size()), 1}});
#ifdef KIT_DRIVEN
  w = calls::remote<decltype(calls::decentral::decentralized_sgd_step)>("decentralized_sgd_step", w, grad, lr, comm);
#else
  ::dtrain::decentralized_sgd_step(w, grad, lr, comm);
#endif
  observe("decentralized_sgd_step", w);
}

}  // namespace dtrain::student
