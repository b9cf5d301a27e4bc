// comm_internal.h: what the communicator's own files share (comm.cpp,
// comm_session.cpp, comm_agreement.cpp, and ledger.cpp through ledger.h), and the
// only header of the kit that includes <mpi.h>. No other file includes it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm.h"

namespace dtrain {

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // false for the world view, which MPI frees itself
  int rank = 0;
  int size = 1;
  // The ledger's view of it: a name, an id for this process, and how many
  // collectives this rank has started on it (the sequence number of the last).
  std::string name = "world";
  int id = 0;
  long calls = 0;
  std::vector<int> members;  // by rank in MPI's world, for the trace's args.ranks
};

namespace comm_detail {

// Throws std::runtime_error naming the call and MPI's own text, unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// The handle of a communicator that was not moved from.
Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle);

// The handle of an MPI communicator: its rank and size read from MPI, a
// new id for the ledger, and the name and members (ranks in MPI's world)
// it goes by. `owned`: freed with it (every communicator but the world).
std::unique_ptr<Communicator::Handle> new_handle(MPI_Comm comm, bool owned, std::string name,
                                                 std::vector<int> members);

// `count` as MPI's int, or std::invalid_argument naming the call.
int to_count(long count, const char* call);

// Seconds on this host's steady clock (CommAccess::wall_time).
double steady_seconds();

// How a rank waits inside a collective: the one place in the kit's C++ that
// depends on which MPI it runs on (tools/kitrun knows the launchers). Open
// MPI's blocking collectives give up the CPU while they wait (kitrun sets
// mpi_yield_when_idle). MPICH's spin, with no setting to stop them, and 8
// ranks on 2 cores then spend their time slices polling: an epoch takes 10x
// longer. So under MPICH the kit starts the nonblocking form of each
// collective and waits for it itself, yielding between polls.
#if defined(MPICH_VERSION)
constexpr bool kWaitYielding = true;
#else
constexpr bool kWaitYielding = false;
#endif

// Waits for a started operation by polling it. A peer that is already there
// answers within the first polls; after them the rank gives its core away
// between polls: Yield while the peers are busy with the same call (a
// collective), Sleep while they may be busy with anything for long (ranks
// that wait for a case of more ranks to begin), and YieldThenSleep where
// a short wait is the rule and a long one means a peer is elsewhere: a
// slow rank, or a hang (the agreement check, where every rank of a hung
// case waits, and the barrier). A hang's waiting ranks then leave the
// cores to the rest of the host instead of yielding on them until the
// watchdog's limit.
enum class Idle { Yield, Sleep, YieldThenSleep };
void wait_polling(MPI_Request& request, const char* call, Idle idle);
// Whether a started request has finished (MPI_Test, checked).
bool request_done(MPI_Request& request, const char* call);
// The same loop around any test: `done` makes progress and says whether all is done.
void poll_until(const std::function<bool()>& done, Idle idle);

// Starts the nonblocking form of an operation and waits for it by polling,
// on every MPI: for the calls whose waits may be long (Idle::YieldThenSleep).
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

// MPI's handle of a request in flight, for the ledger's record of it
// (ledger.h), which names no MPI type itself.
using RawRequest = MPI_Request;
inline RawRequest null_request() { return MPI_REQUEST_NULL; }

}  // namespace comm_detail

}  // namespace dtrain
