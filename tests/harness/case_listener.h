// case_listener.h: the per-case protocol of the test binary, as a gtest
// listener. Before a case its ranks meet (the others sleep); the watchdog
// is armed with the case's limit; a rank that fails records its messages at
// once; after the case every rank of it meets again, and rank 0 prints and
// records (sealed) the outcome, with each failing rank's messages.
#pragma once

#include <gtest/gtest.h>

#include <map>

#include "comm.h"

namespace harness {

struct CaseTally {
  int passed = 0, failed = 0;  // rank 0's count of the cases it recorded
};

// `groups`: for each rank count the cases need, the communicator of ranks
// 0..n-1 (a rank runs only the cases whose group it belongs to). A positive
// `timeout_override` replaces every case's limit; `time_scale` multiplies
// them. gtest owns the listener once it is appended.
::testing::TestEventListener* new_case_listener(dtrain::Communicator& world,
                                                std::map<int, dtrain::Communicator>& groups, double timeout_override,
                                                double time_scale, CaseTally& tally);

}  // namespace harness
