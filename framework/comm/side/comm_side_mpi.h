// comm_side_mpi.h: what the MPI side's files share (side/, comm_link.h), and the only
// header of the kit that includes <mpi.h>: the side is the only process of
// a rank that holds MPI.
#pragma once

#include <mpi.h>

#include <functional>

#include "comm_link.h"

namespace dtrain::side {

// Throws std::runtime_error naming the call and MPI's own text, unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// The child's request, cut short or out of bounds: std::invalid_argument,
// which the side answers as BadArgument (the child's fault, never MPI's).
[[noreturn]] void bad_request(const std::string& why);

// How a rank waits inside a collective: the one place in the kit's C++ that
// depends on which MPI it runs on (tools/kitrun knows the launchers). Open
// MPI's blocking collectives give up the CPU while they wait (kitrun sets
// mpi_yield_when_idle). MPICH's spin, with no setting to stop them, and 8
// ranks on 2 cores then spend their time slices polling: an epoch takes 10x
// longer. So under MPICH the side starts the nonblocking form of each
// collective and waits for it itself, yielding between polls.
#if defined(MPICH_VERSION)
constexpr bool kWaitYielding = true;
#else
constexpr bool kWaitYielding = false;
#endif

// Waits for a started operation by polling it. A peer that is already there
// answers within the first polls; after them the rank gives its core away
// between polls (idle_pause): Yield while the peers are busy with the same
// call (a collective), Sleep while they may be busy with anything for long
// (ranks that wait for a case of more ranks to begin).
using link::Idle;
void wait_polling(MPI_Request& request, const char* call, Idle idle);
// Whether a started request has finished (MPI_Test, checked).
bool request_done(MPI_Request& request, const char* call);
// The same loop around any test: `done` makes progress and says whether all is done.
void poll_until(const std::function<bool()>& done, Idle idle);

// One pause between two polls. Yield gives the core to whoever else is
// ready, but only while the request being served is young: one that has
// waited kLongWait has a peer elsewhere (a slow rank, or a hang, whose
// waiting ranks would otherwise yield on the cores until the watchdog's
// limit, taking a third of a busy host's CPU in context switches), and it
// sleeps between polls from then on. Open MPI's blocking collectives pause
// the same way: their idle progress calls sched_yield (kitrun sets
// mpi_yield_when_idle), which the side defines (comm_side_mpi.cpp).
void idle_pause(Idle idle);
// The request served from now on is a new one: its waits start young.
void request_begins();

// Starts the nonblocking form of an operation and waits for it by polling,
// on every MPI: for the calls whose waits may be long.
template <typename Start>
void run_polled(const char* start_name, Start start, Idle idle) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(start(&request), start_name);
  wait_polling(request, start_name, idle);
}

template <typename Blocking, typename Start>
void run_collective(const char* blocking_name, const char* start_name, Blocking blocking, Start start) {
  if constexpr (kWaitYielding) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(start(&request), start_name);
    wait_polling(request, start_name, Idle::Yield);
  } else {
    (void)start_name;
    (void)start;
    check_mpi(blocking(), blocking_name);
  }
}

}  // namespace dtrain::side
