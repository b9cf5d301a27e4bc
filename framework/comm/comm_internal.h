// comm_internal.h: what the communicator's own files share (comm.cpp,
// comm_session.cpp, comm_agreement.cpp, comm_p2p.cpp, comm_request.cpp, and
// ledger.cpp through ledger.h). None of them calls MPI: each call goes to the
// rank's MPI side over the link (comm_link.h), the only holder of MPI
// (framework/comm/side/).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm.h"
#include "comm_link.h"

namespace dtrain {

struct Communicator::Handle {
  std::int32_t comm = 0;  // the side's number for it; 0 is MPI's world
  bool owned = false;     // false for the world view, which MPI frees itself
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

// The handle of a communicator that was not moved from.
Communicator::Handle& live(const std::unique_ptr<Communicator::Handle>& handle);

// The handle of a communicator the side made (its answer to Dup or Split:
// its number, rank and size, and its members as data). `owned`: freed with
// it (every communicator but the world).
std::unique_ptr<Communicator::Handle> new_handle(const link::Reply& made, bool owned, std::string name,
                                                 std::vector<int> members);

// `count` as MPI's int, or std::invalid_argument naming the call.
int to_count(long count, const char* call);

// Seconds on this host's steady clock (CommAccess::wall_time).
double steady_seconds();

// One request to the side (comm_link.h, link::request makes `h`), the data
// sent, and where the answer's data goes.
link::Reply ask(link::Header h, const void* in = nullptr, std::size_t in_bytes = 0, void* out = nullptr,
                std::size_t out_capacity = 0);
// A request of Allreduce, Allgather or ReduceScatter (their fields are one set).
link::Header collective(link::Kind kind, std::int32_t comm, std::int64_t count, std::int64_t reduction,
                        bool one_rank = false);

// The message of collective #seq on `comm_name` whose ranks disagree:
// `rows` holds, per rank of the communicator, link::kAgreeFields values
// (operation, count, reduction, sequence number, function id, world rank).
// A rank's function is named where they differ (function_name: "" for one
// not known). The ledger's agreement and the driven harness both write it.
std::string disagreement_text(const std::int64_t* rows, int size, long seq, const std::string& comm_name,
                              const char* function, const std::function<std::string(std::int64_t)>& function_name);

// Whether the MPI side keeps a case's account now (CommAccess::account_case).
bool case_open();

// A request in flight, by the side's number for it (0: none).
using RawRequest = std::int64_t;
inline RawRequest null_request() { return 0; }

}  // namespace comm_detail

}  // namespace dtrain
