// traffic.cpp: see traffic.h.
#include "traffic.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "records.h"

namespace dtrain::side {

namespace {
// Distinct (op, count, ranks) kinds a case's record lists, leaving room for
// a memory reading per function; every call past them is counted. No case
// of the kit's makes more than a few dozen.
constexpr std::size_t kMostKinds = facts::kAccountMostKinds - facts::kMostOpenCalls;
}  // namespace

void Traffic::open(int fd, int rank) {
  fd_ = fd;
  rank_ = rank;
}

void Traffic::watch(int child_pid) {
  const std::string path = "/proc/" + std::to_string(child_pid) + "/status";
  status_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  child_pid_ = child_pid;
}

// Under an emulator the kernel counts the emulator's memory, its translated
// code included, which grows as new code runs: no figure of the program's
// own. The kernel names the emulator as the process's executable, whatever
// the program does.
bool emulated(int pid) {
  char target[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  const char* slash = std::strrchr(target, '/');
  return std::strncmp(slash != nullptr ? slash + 1 : target, "qemu-", 5) == 0;
}

long resident_kib(int fd) {
  char text[4096];
  const ssize_t n = fd < 0 ? -1 : ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return -1;
  text[n] = '\0';
  long total = 0;
  int found = 0;
  // Swapped-out pages too: a block paged out (madvise MADV_PAGEOUT, on a
  // host with swap) is still held. VmSwap is absent where the kernel has no swap.
  for (const char* field : {"\nRssAnon:", "\nRssShmem:", "\nVmSwap:"}) {
    const char* at = std::strstr(text, field);
    if (at == nullptr) continue;
    total += std::strtol(at + std::strlen(field), nullptr, 10);
    ++found;
  }
  return found >= 2 && std::strstr(text, "\nRssAnon:") != nullptr && std::strstr(text, "\nRssShmem:") != nullptr
             ? total
             : -1;
}

void Traffic::begin_case(const std::string& name) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (name.empty()) {  // the case ends; what follows is its after account
    if (in_case_) {
      flush_case();
      after_ = true;
    }
    return;
  }
  flush_case();  // a case begun over an open one: both accounts go out as they are
  flush_after();
  case_ = name;
  in_case_ = true;
  open_.clear();
  if (in_case_ && baseline_kib_ < 0) baseline_kib_ = resident_kib(status_fd_);
}

namespace {

// A function's name as an account writes it: C++'s "::" as ".", and
// nothing but letters, digits, '_', '.' and '~' ("" for anything else).
std::string account_name(const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
      out += '.';
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '~') {
      out += c;
    } else {
      return "";
    }
  }
  return out;
}

}  // namespace

std::string Traffic::mark(const char* what, const std::string& function) const {
  return std::string(what) + facts::kMarkSeparator + function;
}

void Traffic::enter(const std::string& name, long argument) {
  const std::lock_guard<std::mutex> lock(mu_);
  const std::string as_written = account_name(name);
  if (as_written.empty() || open_.size() >= static_cast<std::size_t>(facts::kMostOpenCalls)) {
    add(facts::kUnpaired, 0, 0);
    return;
  }
  open_.push_back({as_written, argument, {}});
}

void Traffic::returned(const std::string& name, bool read_memory) {
  const long now = read_memory ? resident_kib(status_fd_) : 0;
  const std::lock_guard<std::mutex> lock(mu_);
  if (open_.empty() || open_.back().name != account_name(name)) {
    add(facts::kUnpaired, 0, 0);
    return;
  }
  const OpenCall call = std::move(open_.back());
  open_.pop_back();
  add(mark(facts::kMarkReturned, call.name), 0, 0);
  for (const auto& [request, tests] : call.tests_running)
    add(mark(facts::kMarkTestedRunningIn, call.name), std::min(tests, facts::kMostTestsCounted), 0);
  if (!in_case_ || !read_memory) return;
  if (emulated_ < 0) emulated_ = emulated(child_pid_) ? 1 : 0;
  // A figure the side can't read counts as unbounded: a rule then fails
  // the case rather than pass what it never saw kept.
  const long held = now < 0 || baseline_kib_ < 0 ? facts::kSideUnreadKib : std::max(0L, now - baseline_kib_);
  if (held_.count(call.name) != 0 || held_.size() < static_cast<std::size_t>(facts::kMostOpenCalls))
    held_[call.name] = std::max(held_[call.name], held);
}

void Traffic::unplanned() {
  const std::lock_guard<std::mutex> lock(mu_);
  add(facts::kUnpaired, 0, 0);
}

void Traffic::note(facts::OpCode op, long count, int ranks) {
  const std::lock_guard<std::mutex> lock(mu_);
  add(facts::kOpNames[op], count, ranks);
}

void Traffic::request(facts::KitRequest r, long count, int ranks) {
  const std::lock_guard<std::mutex> lock(mu_);
  add(facts::kKitRequestNames[r], count, ranks);
}

void Traffic::started(long count) {
  const std::lock_guard<std::mutex> lock(mu_);
  const bool in_call = !open_.empty();
  // An argument past any parameter's index is one no reference's account holds.
  const long argument = in_call ? open_.back().argument : 0;
  const int where = argument >= 0 && argument < facts::kMostCallArgument ? static_cast<int>(argument)
                                                                        : static_cast<int>(facts::kMostCallArgument);
  add(mark(facts::kMarkStartedIn, in_call ? open_.back().name : facts::kNoCall), count, where);
}

void Traffic::waited() {
  const std::lock_guard<std::mutex> lock(mu_);
  add(mark(facts::kMarkWaitedIn, open_.empty() ? facts::kNoCall : open_.back().name), 0, 0);
}

void Traffic::tested_running(long id) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!open_.empty()) ++open_.back().tests_running[id];
}

void Traffic::add(const std::string& op, long count, int ranks) {
  if (!in_case_ && !after_) return;  // the harness's own traffic before the first case
  Calls& calls = in_case_ ? calls_ : after_calls_;
  const auto key = std::make_tuple(op, count, ranks);
  const auto at = calls.find(key);
  if (at != calls.end()) {
    ++at->second;
  } else if (calls.size() < kMostKinds) {
    calls.emplace(key, 1);
  } else {
    ++(in_case_ ? overflow_ : after_overflow_);
  }
}

static std::vector<records::TrafficCall> listed(const std::map<std::tuple<std::string, long, int>, long>& calls) {
  std::vector<records::TrafficCall> out;
  for (const auto& [key, times] : calls) out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), times});
  return out;
}

void Traffic::flush() {
  const std::lock_guard<std::mutex> lock(mu_);
  flush_case();
  flush_after();
}

void Traffic::flush_case() {
  if (!in_case_) return;
  std::vector<records::TrafficCall> calls = listed(calls_);
  if (!held_.empty() && emulated_ == 1) calls.push_back({facts::kEmulated, 0, 0, 1});
  if (emulated_ != 1)
    for (const auto& [function, kib] : held_) calls.push_back({mark(facts::kMarkHeld, function), kib, 0, 1});
  const std::string line = records::traffic(case_, rank_, calls, overflow_) + "\n";
  calls_.clear();
  overflow_ = 0;
  held_.clear();
  open_.clear();
  in_case_ = false;
  write(line);
}

void Traffic::flush_after() {
  if (!after_) return;
  const std::string line = records::traffic(case_, rank_, listed(after_calls_), after_overflow_, true) + "\n";
  after_calls_.clear();
  after_overflow_ = 0;
  after_ = false;
  write(line);
}

void Traffic::write(const std::string& line) {
  if (fd_ < 0) return;
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the runner is gone
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace dtrain::side
