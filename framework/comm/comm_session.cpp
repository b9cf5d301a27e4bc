// comm_session.cpp: MPI's start and end (MpiSession) and the framework's own
// operations beside the student's collectives (CommAccess), comm_runtime.h.
// None of them is counted in bytes_transferred() or checked by the ledger.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "comm_internal.h"
#include "comm_runtime.h"
#include "ledger.h"

namespace dtrain {

using comm_detail::check_mpi;
using comm_detail::live;
using comm_detail::steady_seconds;

MpiSession::MpiSession(int& argc, char**& argv) {
  check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
  // Return codes instead of aborting, so check_mpi can name the failing call.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this is for the compiler and for safety
}

int MpiSession::launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank <= std::numeric_limits<int>::max()) return static_cast<int>(rank);
  }
  return -1;
}

Communicator CommAccess::duplicate(Communicator& comm) {
  const Communicator::Handle& from = live(comm.handle_);
  MPI_Comm copy = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(from.comm, &copy), "MPI_Comm_dup");
  return Communicator(comm_detail::new_handle(copy, true, from.name, from.members));
}

Communicator CommAccess::duplicate_world() {
  Communicator world = Communicator::world();
  return duplicate(world);
}

void CommAccess::rendezvous(Communicator& comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(live(comm.handle_).comm, &request), "MPI_Ibarrier");
  comm_detail::wait_polling(request, "MPI_Test", comm_detail::Idle::Sleep);
}

std::vector<std::string> CommAccess::gather_text(Communicator& comm, const std::string& mine, int root) {
  using comm_detail::to_count;
  const MPI_Comm c = live(comm.handle_).comm;
  const int n = comm.size();
  int my_length = to_count(static_cast<long>(mine.size()), "gather_text");
  std::vector<int> lengths(static_cast<size_t>(n), 0);
  check_mpi(MPI_Gather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, c), "MPI_Gather");
  std::vector<int> offsets(static_cast<size_t>(n), 0);
  long total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[static_cast<size_t>(r)] = to_count(total, "gather_text");
    total += lengths[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(mine.data(), my_length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                        root, c),
            "MPI_Gatherv");
  std::vector<std::string> texts;
  if (comm.rank() != root) return texts;
  for (int r = 0; r < n; ++r)
    texts.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return texts;
}

long CommAccess::max_over_ranks(Communicator& comm, long value) {
  long result = 0;
  const MPI_Comm c = live(comm.handle_).comm;
  // The test harness's end of a case: the ranks done with it wait here for the rest, however long.
  comm_detail::run_polled(
      "MPI_Iallreduce", [&](MPI_Request* r) { return MPI_Iallreduce(&value, &result, 1, MPI_LONG, MPI_MAX, c, r); },
      comm_detail::Idle::YieldThenSleep);
  return result;
}

double CommAccess::wall_time() { return steady_seconds(); }

CommAccess::ClockOffset CommAccess::clock_offset(Communicator& comm) {
  constexpr int kRounds = 50, kTag = 7;
  MPI_Comm c = MPI_COMM_NULL;  // private, so no other message can match these
  check_mpi(MPI_Comm_dup(live(comm.handle_).comm, &c), "MPI_Comm_dup");
  const int n = comm.size(), me = comm.rank();
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check_mpi(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
  std::vector<char> names(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, c),
            "MPI_Allgather");
  auto host = [&](int r) {
    const char* at = names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    return std::string(at, strnlen(at, MPI_MAX_PROCESSOR_NAME));
  };
  auto first_of_host = [&](int r) {
    int f = 0;
    while (host(f) != host(r)) ++f;
    return f;
  };
  std::vector<double> measured(2 * static_cast<size_t>(n), 0.0);  // per rank: offset, uncertainty
  for (int r = 1; r < n; ++r) {
    if (host(r) == host(0) || first_of_host(r) != r || (me != 0 && me != r)) continue;
    double best = std::numeric_limits<double>::infinity(), offset = 0;
    for (int i = 0; i < kRounds; ++i) {
      double theirs = 0;
      if (me == 0) {
        const double sent = steady_seconds();
        check_mpi(MPI_Send(&sent, 1, MPI_DOUBLE, r, kTag, c), "MPI_Send");
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        const double back = steady_seconds();
        if (back - sent < best) {
          best = back - sent;
          offset = theirs - (sent + back) / 2;
        }
      } else {
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        theirs = steady_seconds();
        check_mpi(MPI_Send(&theirs, 1, MPI_DOUBLE, 0, kTag, c), "MPI_Send");
      }
    }
    measured[2 * static_cast<size_t>(r)] = offset;
    measured[2 * static_cast<size_t>(r) + 1] = best / 2;
  }
  check_mpi(MPI_Bcast(measured.data(), 2 * n, MPI_DOUBLE, 0, c), "MPI_Bcast");
  MPI_Comm_free(&c);
  const size_t mine = 2 * static_cast<size_t>(first_of_host(me));
  return {measured[mine], measured[mine + 1], host(me)};
}

double CommAccess::seconds_in_collectives() { return comm_detail::collective_seconds(); }

void CommAccess::set_name(Communicator& comm, const std::string& name) {
  Communicator::Handle& h = live(comm.handle_);
  const std::lock_guard<std::mutex> lock(comm_detail::ledger_mutex());
  h.name = name;
}

std::string CommAccess::name(const Communicator& comm) { return live(comm.handle_).name; }

}  // namespace dtrain
