// decentral_forms.h: Part 15's functions in the form a driven call carries
// them (framework/calls/driven.h): the vector each updates in place goes
// back as the call's result. The student's process serves these
// (decentral_served.cpp); the harness calls them by their declarations
// (decentral_calls.h).
#pragma once

#include "decentral.h"

namespace dtrain::calls::decentral {

inline Vector gossip_mix(Vector x, Communicator& comm) {  // (N) -> (N)
  ::dtrain::gossip_mix(x, comm);
  return x;
}

inline Vector decentralized_sgd_step(Vector w, const Vector& grad, double lr, Communicator& comm) {  // (N), (N) -> (N)
  ::dtrain::decentralized_sgd_step(w, grad, lr, comm);
  return w;
}

}  // namespace dtrain::calls::decentral
