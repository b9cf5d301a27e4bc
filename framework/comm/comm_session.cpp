// comm_session.cpp: the link to the rank's MPI side, which starts and ends
// MPI (MpiSession), and the framework's own operations beside the student's
// collectives (CommAccess), comm_runtime.h. None of them is counted in
// bytes_transferred() or checked by the ledger.
#include <algorithm>
#include <cstdio>
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

using comm_detail::ask;
using comm_detail::live;
using comm_detail::steady_seconds;

namespace {
bool g_finalized = false;
}  // namespace

// Started without its MPI side (by hand, or by a bare mpirun or mpiexec):
// one line saying how to start it, from one rank, and exit status 2. What
// the launcher adds after it is the launcher's.
[[noreturn]] static void say_how_to_start(const char* program) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank == nullptr) rank = std::getenv("PMI_RANK");  // MPICH's Hydra
  if (rank == nullptr || std::strcmp(rank, "0") == 0)
    std::fprintf(stderr, "%s: start the kit's programs with tools/kitrun (tools/kitrun -n 4 %s ...), which starts "
                 "each rank's MPI side, or with a make target (make train, make test, ...)\n", program, program);
  std::exit(2);
}

MpiSession::MpiSession(int& argc, char**& argv) {
  if (!link::available()) say_how_to_start(argc > 0 && argv[0] != nullptr ? argv[0] : "this program");
}

MpiSession::~MpiSession() {
  if (g_finalized) return;
  g_finalized = true;
  try {
    ask(link::request(link::Kind::Finalize));
  } catch (...) {
    // the side is gone: the job is over already
  }
}

bool MpiSession::finalized() { return g_finalized; }

void MpiSession::abort_job(int exit_code) { link::abort_job(exit_code); }

int MpiSession::launcher_rank() {
  // The side passes on what the launcher announced (each MPI names it differently).
  const char* value = std::getenv("KIT_LAUNCHER_RANK");
  if (value == nullptr || *value == '\0') return -1;
  char* end = nullptr;
  const long rank = std::strtol(value, &end, 10);
  if (*end == '\0' && rank >= 0 && rank <= std::numeric_limits<int>::max()) return static_cast<int>(rank);
  return -1;
}

Communicator CommAccess::duplicate(Communicator& comm) {
  const Communicator::Handle& from = live(comm.handle_);
  std::vector<int> members(static_cast<std::size_t>(from.size));
  const link::Reply made =
      ask(link::request(link::Kind::Dup, from.comm), nullptr, 0, members.data(), members.size() * sizeof(int));
  return Communicator(comm_detail::new_handle(made, true, from.name, std::move(members)));
}

std::int32_t CommAccess::side_number(const Communicator& comm) { return live(comm.handle_).comm; }

const std::vector<int>& CommAccess::members(const Communicator& comm) { return live(comm.handle_).members; }

Communicator CommAccess::borrow(std::int32_t side_number, const std::string& name, std::vector<int> members) {
  if (side_number == 0) return Communicator::world();
  const int me = Communicator::world().rank();
  const int world_size = Communicator::world().size();
  if (members.empty()) {
    members.resize(static_cast<std::size_t>(world_size));
    const link::Reply listed = ask(link::request(link::Kind::Members, side_number), nullptr, 0, members.data(),
                                   members.size() * sizeof(int));
    if (listed.out_bytes % sizeof(int) != 0) throw std::runtime_error("the MPI side's members of a communicator are not whole");
    members.resize(listed.out_bytes / sizeof(int));
  }
  for (int m : members)
    if (m < 0 || m >= world_size) throw std::invalid_argument("a communicator's member out of the world's ranks");
  link::Reply made{};
  made.comm = side_number;
  made.answer.made.size = static_cast<std::int64_t>(members.size());
  made.answer.made.rank = -1;
  for (std::size_t r = 0; r < members.size(); ++r)
    if (members[r] == me) made.answer.made.rank = static_cast<std::int64_t>(r);
  if (made.answer.made.rank < 0) throw std::invalid_argument("a communicator this rank is not a member of");
  return Communicator(comm_detail::new_handle(made, false, name, std::move(members)));
}

Communicator CommAccess::duplicate_world() {
  Communicator world = Communicator::world();
  return duplicate(world);
}

void CommAccess::rendezvous(Communicator& comm) {
  link::Header h = link::request(link::Kind::Barrier, live(comm.handle_).comm);
  h.ask.barrier.idle = static_cast<std::int64_t>(link::Idle::Sleep);
  ask(h);
}

std::vector<std::string> CommAccess::gather_text(Communicator& comm, const std::string& mine, int root) {
  link::Header h = link::request(link::Kind::GatherText, live(comm.handle_).comm);
  h.ask.gather_text.root = root;
  h.in_bytes = mine.size();
  std::string all;
  link::call(h, mine.data(), nullptr, 0, &all);
  std::vector<std::string> texts;
  if (comm.rank() != root) return texts;
  // Per rank: its length as 8 bytes, then its text (side/comm_side_text.cpp).
  for (std::size_t at = 0; at + sizeof(std::int64_t) <= all.size();) {
    std::int64_t length = 0;
    std::memcpy(&length, all.data() + at, sizeof length);
    at += sizeof length;
    texts.push_back(all.substr(at, static_cast<std::size_t>(length)));
    at += static_cast<std::size_t>(length);
  }
  return texts;
}

long CommAccess::max_over_ranks(Communicator& comm, long value) {
  link::Header h = link::request(link::Kind::MaxOverRanks, live(comm.handle_).comm);
  h.ask.max_over_ranks.value = value;
  return static_cast<long>(ask(h).answer.max_over_ranks.maximum);
}

void CommAccess::salt(double* values, std::size_t count) {
  link::Header h = link::request(link::Kind::Salt);
  h.in_bytes = count * sizeof(double);
  if (link::call(h, values, values, h.in_bytes).out_bytes != h.in_bytes)
    throw std::runtime_error("salt: an answer of another size from the MPI side");
}

double CommAccess::wall_time() { return steady_seconds(); }

CommAccess::ClockOffset CommAccess::clock_offset(Communicator& comm) {
  link::Header h = link::request(link::Kind::ClockOffset, live(comm.handle_).comm);
  std::string answer;
  link::call(h, nullptr, nullptr, 0, &answer);
  double values[2] = {0, 0};
  if (answer.size() < sizeof values) throw std::runtime_error("clock_offset: a short answer from the MPI side");
  std::memcpy(values, answer.data(), sizeof values);
  return {values[0], values[1], answer.substr(sizeof values)};
}

namespace {
bool g_case_open = false;  // the MPI side keeps a case's account now: student calls are marked
int g_serving = 0;         // the driven mode's student process carries out a call now
}

bool comm_detail::case_open() { return g_case_open || g_serving > 0; }

void CommAccess::serving(bool now) { g_serving += now ? 1 : -1; }

void CommAccess::account_case(const std::string& name) {
  link::Header h = link::request(link::Kind::Case);
  h.in_bytes = name.size();
  link::call(h, name.data(), nullptr, 0);
  g_case_open = !name.empty();
}

// The driven mode's harness: the side marks each call it hands on itself,
// so the harness marks none.
static bool g_driving = false;
void CommAccess::drive_calls() { g_driving = true; }

void CommAccess::mark_call(const char* function, std::int64_t argument) {
  if (g_case_open && !g_driving) link::enter(function, argument);
}

void CommAccess::mark_return(const char* function) {
  if (!g_case_open || g_driving) return;
  link::Header h = link::request(link::Kind::Return);
  h.in_bytes = std::min(std::strlen(function), link::kMostNameBytes);
  link::call(h, function, nullptr, 0);
}

double CommAccess::seconds_in_collectives() { return comm_detail::collective_seconds(); }

void CommAccess::set_name(Communicator& comm, const std::string& name) {
  Communicator::Handle& h = live(comm.handle_);
  const std::lock_guard<std::mutex> lock(comm_detail::ledger_mutex());
  h.name = name;
}

std::string CommAccess::name(const Communicator& comm) { return live(comm.handle_).name; }

}  // namespace dtrain
