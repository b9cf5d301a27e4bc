// comm_side_text.cpp: the side's answers to the framework's own requests that
// carry no student data: gathering text for rank 0's report, and measuring
// each host's clock against rank 0's (CommAccess, comm_runtime.h).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comm_side_ops.h"

namespace dtrain::side {

Answer Ops::text(const link::Header& h, const std::vector<char>& in) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  if (h.ask.gather_text.root < 0 || h.ask.gather_text.root >= n) bad_request("gather_text: root out of range");
  const int root = static_cast<int>(h.ask.gather_text.root);
  if (in.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) bad_request("gather_text: too long");
  int my_length = static_cast<int>(in.size());
  std::vector<int> lengths(static_cast<size_t>(n), 0);
  check_mpi(MPI_Gather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, c), "MPI_Gather");
  std::vector<int> offsets(static_cast<size_t>(n), 0);
  long total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<size_t>(r)];
    if (total > std::numeric_limits<int>::max()) throw std::runtime_error("gather_text: the texts are too long");
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(in.data(), my_length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root, c),
            "MPI_Gatherv");
  Answer a;
  int me = 0;
  check_mpi(MPI_Comm_rank(c, &me), "MPI_Comm_rank");
  if (me != root) return a;
  // Per rank: its length as 8 bytes, then its text.
  for (int r = 0; r < n; ++r) {
    const std::int64_t length = lengths[static_cast<size_t>(r)];
    const char* at = reinterpret_cast<const char*>(&length);
    a.data.insert(a.data.end(), at, at + sizeof length);
    a.data.insert(a.data.end(), all.begin() + offsets[static_cast<size_t>(r)],
                  all.begin() + offsets[static_cast<size_t>(r)] + lengths[static_cast<size_t>(r)]);
  }
  return a;
}

static double steady_now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

Answer Ops::clock_offset(const link::Header& h) {
  constexpr int kRounds = 50, kTag = 7;
  MPI_Comm c = MPI_COMM_NULL;  // private, so no other message can match these
  check_mpi(MPI_Comm_dup(comm(h.comm), &c), "MPI_Comm_dup");
  int n = 0, me = 0;
  check_mpi(MPI_Comm_size(c, &n), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(c, &me), "MPI_Comm_rank");
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
        const double sent = steady_now();
        check_mpi(MPI_Send(&sent, 1, MPI_DOUBLE, r, kTag, c), "MPI_Send");
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        const double back = steady_now();
        if (back - sent < best) {
          best = back - sent;
          offset = theirs - (sent + back) / 2;
        }
      } else {
        check_mpi(MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, kTag, c, MPI_STATUS_IGNORE), "MPI_Recv");
        theirs = steady_now();
        check_mpi(MPI_Send(&theirs, 1, MPI_DOUBLE, 0, kTag, c), "MPI_Send");
      }
    }
    measured[2 * static_cast<size_t>(r)] = offset;
    measured[2 * static_cast<size_t>(r) + 1] = best / 2;
  }
  check_mpi(MPI_Bcast(measured.data(), 2 * n, MPI_DOUBLE, 0, c), "MPI_Bcast");
  MPI_Comm_free(&c);
  const size_t mine = 2 * static_cast<size_t>(first_of_host(me));
  const double values[2] = {measured[mine], measured[mine + 1]};
  Answer a;
  a.data.resize(sizeof values);
  std::memcpy(a.data.data(), values, sizeof values);
  const std::string my_host = host(me);
  a.data.insert(a.data.end(), my_host.begin(), my_host.end());
  return a;
}

}  // namespace dtrain::side
