// case_listener.h: the per-case protocol of the test binary, as a gtest
// listener. Before a case its ranks meet (the others sleep); the watchdog
// is armed with the case's limit; a rank that fails records its messages at
// once; after the case every rank of it meets again, and rank 0 prints and
// records (sealed) the outcome, with each failing rank's messages.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm.h"

namespace harness {

struct CaseTally {
  int passed = 0, failed = 0;  // rank 0's count of the cases it recorded
};

// A case's time limit: its run's in the parts table, or the one the
// runner calibrated on this machine for the run (kit/calibration.py), times
// `scale` (KIT_TIME_SCALE's shortening, a hung part's share); a positive
// `override_all` replaces every case's (--case-timeout, by hand).
struct CaseLimits {
  double override_all = 0;
  double scale = 1;
  std::map<std::string, double> by_run;  // a run's gtest filter -> its calibrated limit, in seconds
  double seconds_for(const char* filter, double table_seconds) const {
    if (override_all > 0) return override_all;
    const auto it = by_run.find(filter);
    return (it != by_run.end() ? it->second : table_seconds) * scale;
  }
};

// `groups`: for each rank count the cases need, the communicator of ranks
// 0..n-1 (a rank runs only the cases whose group it belongs to). gtest owns
// the listener once it is appended.
::testing::TestEventListener* new_case_listener(dtrain::Communicator& world,
                                                std::map<int, dtrain::Communicator>& groups, CaseLimits limits,
                                                CaseTally& tally);

}  // namespace harness
