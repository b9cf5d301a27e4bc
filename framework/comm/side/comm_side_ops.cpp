// comm_side_ops.cpp: see comm_side_ops.h. The child checked every request before
// sending it (comm.cpp, comm_p2p.cpp), with messages that name the
// student's call; the side checks them again, since a request is the
// child's bytes, and answers a broken one with BadArgument.
#include "comm_side_ops.h"

#include <climits>
#include <string>

#include "comm_side_checks.h"
#include "comm_side_salt.h"

namespace dtrain::side {

using link::Header;
using link::Kind;

Ops::Ops(Traffic& traffic) : traffic_(traffic), comms_{MPI_COMM_WORLD} {}

MPI_Comm Ops::comm(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= comms_.size() || comms_[static_cast<std::size_t>(id)] == MPI_COMM_NULL)
    bad_request("no communicator " + std::to_string(id));
  return comms_[static_cast<std::size_t>(id)];
}

int Ops::size_of(MPI_Comm c) const {
  int n = 0;
  check_mpi(MPI_Comm_size(c, &n), "MPI_Comm_size");
  return n;
}

std::int32_t Ops::add(MPI_Comm c) {
  comms_.push_back(c);
  return static_cast<std::int32_t>(comms_.size() - 1);
}

std::int64_t Ops::group_of(std::int32_t comm) const {
  const auto found = groups_.find(comm);
  return comm == 0 ? 1 : found == groups_.end() ? -1 : found->second;
}

std::int64_t Ops::next_group(std::int32_t parent, std::int64_t color) {
  // Every rank of the parent makes its communicators in the same order (a
  // split or a dup is a collective of the parent's), so the parent's group,
  // the count of those made from it and the color name one group on all
  // its ranks: a splitmix64 of the three, kept within JSON's exact integers.
  std::uint64_t z = static_cast<std::uint64_t>(group_of(parent)) * 0x9E3779B97F4A7C15ULL ^
                    static_cast<std::uint64_t>(++made_from_[parent]) * 0xBF58476D1CE4E5B9ULL ^
                    static_cast<std::uint64_t>(color + 1) * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<std::int64_t>(z & ((std::uint64_t{1} << 52) - 1));
}

Answer Ops::new_comm(MPI_Comm c, std::vector<int> members, std::int64_t group) {
  Answer a = with(members.data(), members.size());
  a.reply.comm = add(c);
  groups_[a.reply.comm] = group;
  if (student_asks_) students_comms_.insert(a.reply.comm);
  int rank = 0;
  check_mpi(MPI_Comm_rank(c, &rank), "MPI_Comm_rank");
  a.reply.answer.made = {rank, size_of(c)};
  return a;
}

std::vector<int> world_ranks_of(MPI_Comm comm) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  int n = 0;
  check_mpi(MPI_Group_size(group, &n), "MPI_Group_size");
  std::vector<int> mine(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) mine[static_cast<size_t>(r)] = r;
  check_mpi(MPI_Group_translate_ranks(group, n, mine.data(), world, out.data()), "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

Answer Ops::dispatch(const Header& h, std::vector<char>& in) {
  request_begins();
  switch (h.kind) {
    case Kind::Hello: {
      Answer a;
      int rank = 0;
      check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
      a.reply.answer.made = {rank, size_of(MPI_COMM_WORLD)};
      kit_request(facts::kRequestHello, 0, size_of(MPI_COMM_WORLD));
      return a;
    }
    case Kind::Dup: {
      const MPI_Comm from = comm(h.comm);
      MPI_Comm copy = MPI_COMM_NULL;
      check_mpi(MPI_Comm_dup(from, &copy), "MPI_Comm_dup");
      kit_request(facts::kRequestDup, 0, size_of(from));
      return new_comm(copy, world_ranks_of(copy), next_group(h.comm, -1));
    }
    case Kind::Split: {
      const MPI_Comm from = comm(h.comm);
      const link::ask::Split& f = h.ask.split;
      if (f.color < 0 || f.color > INT_MAX || f.key < INT_MIN || f.key > INT_MAX)
        bad_request("split: color or key out of range");
      agree(h.comm, facts::kSplit, 0, facts::kNoReduction);
      MPI_Comm part = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(from, static_cast<int>(f.color), static_cast<int>(f.key), &part), "MPI_Comm_split");
      traffic_.note(facts::kSplit, 0, size_of(from));
      return new_comm(part, world_ranks_of(part), next_group(h.comm, f.color));
    }
    case Kind::Free: {
      if (h.comm == 0) bad_request("the world is not freed");
      MPI_Comm c = comm(h.comm);
      // The driven mode's student process frees only what it made: the
      // harness's communicators (lent to it by number) are the harness's.
      if (student_asks_ && students_comms_.count(h.comm) == 0) {
        traffic_.unplanned();
        bad_request("communicator " + std::to_string(h.comm) + " is not the student's process's to free");
      }
      students_comms_.erase(h.comm);
      kit_request(facts::kRequestFree, 0, size_of(c));
      MPI_Comm_free(&c);
      comms_[static_cast<std::size_t>(h.comm)] = MPI_COMM_NULL;
      return {};
    }
    case Kind::Members: {
      const std::vector<int> members = world_ranks_of(comm(h.comm));
      kit_request(facts::kRequestMembers, 0, static_cast<int>(members.size()));
      return with(members.data(), members.size());
    }
    case Kind::Allreduce:
    case Kind::Allgather:
    case Kind::ReduceScatter:
      return reduce(h, in);
    case Kind::Barrier: {
      const MPI_Comm c = comm(h.comm);
      const std::int64_t idle = h.ask.barrier.idle;
      if (idle < 0 || idle > 1) bad_request("barrier: no such way to wait");
      if (static_cast<Idle>(idle) != Idle::Sleep) agree(h.comm, facts::kBarrier, 0, facts::kNoReduction);
      run_polled("MPI_Ibarrier", [&](MPI_Request* r) { return MPI_Ibarrier(c, r); }, static_cast<Idle>(idle));
      if (static_cast<Idle>(idle) == Idle::Sleep)
        kit_request(facts::kRequestRendezvous, 0, size_of(c));  // the harness's, between cases
      else
        traffic_.note(facts::kBarrier, 0, size_of(c));
      return {};
    }
    case Kind::Agree: {
      const MPI_Comm c = comm(h.comm);
      const std::int64_t* mine = data_of<std::int64_t>(in, link::kAgreeFields, "agreement");
      std::vector<std::int64_t> all(static_cast<std::size_t>(link::kAgreeFields) * static_cast<std::size_t>(size_of(c)));
      // Where a hung case's ranks wait (the call after it is made only once all are here).
      run_polled(
          "MPI_Iallgather (agreement)",
          [&](MPI_Request* r) {
            return MPI_Iallgather(mine, link::kAgreeFields, MPI_INT64_T, all.data(), link::kAgreeFields, MPI_INT64_T,
                                  c, r);
          },
          Idle::Yield);
      kit_request(facts::kRequestAgree, 0, size_of(c));
      return with(all.data(), all.size());
    }
    case Kind::MaxOverRanks: {
      const MPI_Comm c = comm(h.comm);
      long value = static_cast<long>(h.ask.max_over_ranks.value), result = 0;
      // The test harness's end of a case: the ranks done with it wait here for the rest, however long.
      run_polled(
          "MPI_Iallreduce", [&](MPI_Request* r) { return MPI_Iallreduce(&value, &result, 1, MPI_LONG, MPI_MAX, c, r); },
          Idle::Yield);
      kit_request(facts::kRequestMax, 0, size_of(c));
      Answer a;
      a.reply.answer.max_over_ranks.maximum = result;
      return a;
    }
    case Kind::GatherText:
      kit_request(facts::kRequestGatherText, static_cast<long>(in.size()), size_of(comm(h.comm)));
      return text(h, in);
    case Kind::ClockOffset:
      kit_request(facts::kRequestClockOffset, 0, size_of(comm(h.comm)));
      return clock_offset(h);
    case Kind::Send:
    case Kind::Recv:
      return point_to_point(h, in);
    case Kind::Sendrecv:
      return sendrecv(h, in);
    case Kind::Istart:
    case Kind::Test:
    case Kind::Wait:
      return request(h, in);
    case Kind::Salt: {
      if (in.size() % sizeof(double) != 0) bad_request("salt: data that is not whole doubles");
      const std::size_t n = in.size() / sizeof(double);
      kit_request(facts::kRequestSalt, static_cast<long>(n), 1);
      Answer a;
      a.data = std::move(in);
      salt_values(reinterpret_cast<double*>(a.data.data()), n);
      return a;
    }
    case Kind::Case:
      traffic_.begin_case(std::string(in.begin(), in.end()));
      // The page's counts start again with a case, and stay once it ends:
      // a finished rank's roll-call says what its case did.
      if (!in.empty()) page_case_begins();
      return {};
    case Kind::Return:
      traffic_.returned(std::string(in.begin(), in.end()));
      return {};
    case Kind::Enter:  // served before it gets here (it has no answer)
    case Kind::Finalize:
    case Kind::Call:   // the driven mode's, which comm_side_serve.cpp carries between its two processes
    case Kind::Serve:
    case Kind::Upcall:
    case Kind::Resume:
      break;
  }
  bad_request("unknown request " + std::to_string(static_cast<int>(h.kind)));
}


Ops::Collective Ops::collective_agreed(const Header& h) {
  const MPI_Comm c = comm(h.comm);
  const int n = size_of(c);
  const link::ask::Collective& f = h.ask.collective;
  const int count = count_of(f.count, "collective");
  if (static_cast<long>(count) * n > INT_MAX) bad_request("collective: count times ranks beyond MPI's int");
  const bool gather = h.kind == Kind::Allgather;
  const facts::OpCode op = h.kind == Kind::Allreduce ? facts::kAllreduce : gather ? facts::kAllgather
                                                                                   : facts::kReduceScatter;
  agree(h.comm, op, f.count, gather ? facts::kNoReduction : f.reduction);
  const auto whole = static_cast<std::size_t>(count) * static_cast<std::size_t>(n);
  const Collective s{c, op, count, n, h.kind == Kind::ReduceScatter ? whole : static_cast<std::size_t>(count),
                     gather ? whole : static_cast<std::size_t>(count), f.one_rank == link::kOneRank};
  if (s.one_rank && n != 1) bad_request("collective: a one-rank call on " + std::to_string(n) + " ranks");
  if (!gather) to_mpi(f.reduction);  // a reduction MPI has
  return s;
}

void Ops::carry_collective(const Header& h, const Collective& s, const double* src, double* dst) {
  const MPI_Comm c = s.comm;
  const int count = s.count;
  if (h.kind == Kind::Allgather) {
    run_collective("MPI_Allgather", "MPI_Iallgather",
                   [&] { return MPI_Allgather(src, count, MPI_DOUBLE, dst, count, MPI_DOUBLE, c); },
                   [&](MPI_Request* r) { return MPI_Iallgather(src, count, MPI_DOUBLE, dst, count, MPI_DOUBLE, c, r); });
  } else {
    const MPI_Op op = to_mpi(h.ask.collective.reduction);
    const void* from = src == dst ? MPI_IN_PLACE : src;  // in place: a reduce-scatter's block is the buffer's first
    if (h.kind == Kind::Allreduce)
      run_collective("MPI_Allreduce", "MPI_Iallreduce",
                     [&] { return MPI_Allreduce(from, dst, count, MPI_DOUBLE, op, c); },
                     [&](MPI_Request* r) { return MPI_Iallreduce(from, dst, count, MPI_DOUBLE, op, c, r); });
    else
      run_collective("MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block",
                     [&] { return MPI_Reduce_scatter_block(from, dst, count, MPI_DOUBLE, op, c); },
                     [&](MPI_Request* r) { return MPI_Ireduce_scatter_block(from, dst, count, MPI_DOUBLE, op, c, r); });
  }
  traffic_.note(s.op, count, s.ranks);
}

void Ops::count_one_rank(const Collective& s, std::size_t data_bytes) {
  if (data_bytes != 0) bad_request("collective: a one-rank call with data");
  traffic_.note(s.op, s.count, 1);
}

Answer Ops::reduce(const Header& h, std::vector<char>& in) {
  const Collective s = collective_agreed(h);
  Answer a;
  if (s.one_rank) {
    count_one_rank(s, in.size());
    return a;
  }
  double* buf = const_cast<double*>(data_of<double>(in, static_cast<long>(s.in), facts::kOpNames[s.op]));
  if (h.kind == Kind::Allgather) {
    carry_collective(h, s, buf, doubles_of(a, s.out));
    return a;
  }
  carry_collective(h, s, buf, buf);  // MPI reduces in place; the answer keeps the buffer
  in.resize(s.out * sizeof(double));
  a.data = std::move(in);
  return a;
}

std::size_t Ops::collective(const Header& h, const void* src, std::size_t src_bytes, void* dst, std::size_t dst_bytes) {
  const Collective s = collective_agreed(h);
  if (s.one_rank) {
    count_one_rank(s, src_bytes);
    return 0;
  }
  if (src_bytes != s.in * sizeof(double) || dst_bytes < s.out * sizeof(double))
    bad_request("collective: " + std::to_string(src_bytes) + " bytes of data and room for " + std::to_string(dst_bytes) +
                " where " + std::to_string(s.in * sizeof(double)) + " and " + std::to_string(s.out * sizeof(double)) +
                " belong");
  carry_collective(h, s, static_cast<const double*>(src), static_cast<double*>(dst));
  return s.out * sizeof(double);
}

}  // namespace dtrain::side
