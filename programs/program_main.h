// program_main.h: how the training programs end on an error.
#pragma once

#include <cstdio>
#include <exception>

#include "comm_runtime.h"
#include "idx_dataset.h"
#include "not_implemented.h"

namespace dtrain {

// Runs `body` and turns an exception into a message and an exit status.
// Data errors and unfinished stubs happen on every rank alike, before any
// rank can be left waiting, so rank 0 reports them and every rank returns 1.
// Any other error may hit one rank in the middle of a collective: that rank
// reports it and ends the whole job, so no other rank waits forever.
template <typename Body>
int run_or_report(const char* program, Communicator& world, Body&& body) {
  try {
    return body();
  } catch (const DataError& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  } catch (const NotImplemented& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: [rank %d] %s\n", program, world.rank(), e.what());
    std::fflush(stderr);
    MpiSession::abort_job(1);
  }
}

}  // namespace dtrain
