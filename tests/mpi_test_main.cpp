// mpi_test_main.cpp: the MPI-aware main of every kit test binary.
//
// Run a part through make (`make test-part3`), or by hand:
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part3*'
// Flags besides gtest's:
//   --results=PATH          append the records of tests/records.h to PATH; the
//                           part runner and the grader read them, trusting a plan
//                           or a result only with a valid seal (results_seal.h)
//   --case-timeout=SECONDS  override every suite's per-case time limit
//   --time-scale=F          multiply every per-case time limit by F (0 < F <= 1; kit.parts.time_scale)
//   --trace-dir=DIR         write the Chrome trace of each failing case to
//                           DIR/<case>.json (`make test-partN TRACE=1`)
//   --record=PATH           staff only: write the values of recorded cases
//                           (tests/recorded.h) to PATH instead of checking them
//
// A case of a run of n ranks in the parts table runs on ranks 0..n-1 of the job, so one job with enough ranks runs cases of every size; the
// other ranks sleep meanwhile. After a case its ranks meet on a private
// communicator and rank 0 prints and records the outcome, with each
// failing rank's messages. A rank that fails writes its messages to the
// results file at once, so they survive if the job has to be ended. A case
// that does not finish in time (a rank waiting in a collective the others
// never joined, usually) ends the job; a crash or exit() inside a case is
// recorded too. The runner then starts the remaining cases in a new job.
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm_runtime.h"
#include "harness.h"
#include "kit_test.h"
#include "layer_profiler.h"
#include "platform.h"
#include "recorded.h"
#include "records.h"
#include "results_seal.h"
#include "trace.h"

namespace harness {

namespace {

bool any_match(const std::string& patterns, const std::string& name) {
  std::stringstream list(patterns);
  std::string one;
  while (std::getline(list, one, ':'))
    if (!one.empty() && ::fnmatch(one.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace

bool selected_by_filter(const std::string& filter, const std::string& name) {
  const size_t dash = filter.find('-');
  std::string positive = filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  if (positive.empty()) positive = "*";
  if (name.find("DISABLED_") != std::string::npos) return false;
  return any_match(positive, name) && !any_match(negative, name);
}

const TableRun* run_of(const std::string& case_name, const TableRun** also) {
  const TableRun* found = nullptr;
  for (const TableRun& run : kTableRuns) {
    if (!selected_by_filter(run.filter, case_name)) continue;
    if (found == nullptr) {
      found = &run;
    } else if (also != nullptr) {
      *also = &run;
      break;
    }
  }
  return found;
}

// Each case hands student code a fresh copy of the world communicator, so
// messages a broken case leaves unmatched can never be matched by a later case.
std::unique_ptr<dtrain::Communicator>& case_world() {
  static std::unique_ptr<dtrain::Communicator> current;
  return current;
}

namespace {

int g_results_fd = -1;
int g_rank = 0;

// One record is one write() of one line, so records of different ranks
// never interleave inside a line (O_APPEND).
void write_record(const std::string& line) {
  if (g_results_fd < 0) return;
  const std::string text = line + "\n";
  ssize_t ignored = ::write(g_results_fd, text.data(), text.size());
  (void)ignored;
}

// ---- what a case that never finishes, crashes or exits leaves behind ----

char g_abort_prefix[1024];  // records::abort_prefix of the running case
char g_case_name[512];      // the same case, for a run by hand (no results file)
volatile sig_atomic_t g_in_case = 0;

void arm_abort_prefix(const std::string& name) {
  std::snprintf(g_abort_prefix, sizeof g_abort_prefix, "%s", records::abort_prefix(name, g_rank).c_str());
  std::snprintf(g_case_name, sizeof g_case_name, "%s", name.c_str());
}

// Joins the pieces into `line`, as far as they fit; async-signal-safe.
size_t join(char* line, size_t size, std::initializer_list<const char*> parts) {
  size_t n = 0;
  for (const char* part : parts) {
    const size_t len = std::strlen(part);
    if (n + len >= size) break;
    std::memcpy(line + n, part, len);
    n += len;
  }
  line[n] = '\0';
  return n;
}

// Async-signal-safe: only memcpy/strlen/write. With no results file (a run
// by hand with KIT_BARE=1) the rank says it on stderr, since no runner will.
void write_abort(const char* why) {
  char line[1400];
  if (g_results_fd < 0) {
    char rank[16], *digit = rank + sizeof rank;
    *--digit = '\0';
    for (unsigned r = static_cast<unsigned>(g_rank);; r /= 10) {
      *--digit = static_cast<char>('0' + r % 10);
      if (r < 10) break;
    }
    const size_t n = join(line, sizeof line, {"[rank ", digit, "] ", g_case_name, ": ", why, "\n"});
    ssize_t ignored = ::write(2, line, n);
    (void)ignored;
    return;
  }
  const size_t n = join(line, sizeof line, {g_abort_prefix, why, records::kAbortSuffix});
  ssize_t ignored = ::write(g_results_fd, line, n);
  (void)ignored;
}

void on_fatal_signal(int sig) {
  if (g_in_case) {
    const char* why = sig == SIGSEGV   ? "crashed with SIGSEGV (invalid memory access)"
                      : sig == SIGBUS  ? "crashed with SIGBUS (invalid memory access)"
                      : sig == SIGFPE  ? "crashed with SIGFPE (arithmetic error, e.g. integer division by zero)"
                      : sig == SIGILL  ? "crashed with SIGILL (illegal instruction)"
                      : sig == SIGABRT ? "aborted (SIGABRT: abort(), a failed assert, or an uncaught exception)"
                                       : "was ended by a signal";
    // Which student function it happened in (the ledger's, readable here).
    const char* function = dtrain::ledger::function_now_signal_safe();
    char text[700];
    join(text, sizeof text, {why, function ? " in " : "", function ? function : ""});
    write_abort(text);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_exit_inside_case() {
  if (g_in_case) write_abort("the process exited in the middle of the case (exit() or quick_exit() called?)");
}

// Ends every process the case started; returns how many there were. They
// are stopped first, so that a process that keeps forking can't outrun us;
// this process is their subreaper (see main), so none escapes to init.
int end_stray_processes() {
  // The usual case, without a look at the process table: no child at all, so no descendant
  // either (an orphaned grandchild would have become our child).
  if (::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD) return 0;
  std::set<pid_t> stopped;
  for (int round = 0; round < 500; ++round) {
    bool new_ones = false;
    for (pid_t pid : dtrain::platform::descendants(::getpid())) {
      if (stopped.insert(pid).second) {
        ::kill(pid, SIGSTOP);
        new_ones = true;
      }
    }
    if (!new_ones) break;
  }
  for (pid_t pid : stopped) ::kill(pid, SIGKILL);
  for (int round = 0; round < 100 && !dtrain::platform::descendants(::getpid()).empty(); ++round) {
    for (pid_t pid : dtrain::platform::descendants(::getpid())) ::kill(pid, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::usleep(1000);
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return static_cast<int>(stopped.size());
}

// The results file, read back by the watchdog to hear the other ranks'
// roll-call answers (they share the file; it is on this host).
std::string g_results_path;
std::string g_trace_dir;  // --trace-dir: a case the watchdog ends leaves each rank's part of its trace here

// Rank r's watchdog. When its case runs out of time (or, after this rank
// failed, out of its short grace), it calls the roll: it records what this
// rank is doing (its ledger's state), and every other rank of the case,
// which watches the file, answers the same way at once. Only when every rank
// of the case has answered (or kRollCallWaitSeconds have passed) does a rank
// end the job, so no rank's answer can be lost to the others ending first,
// whatever the load.
class Watchdog {
 public:
  static constexpr double kPollSeconds = 0.05;
  static constexpr double kRollCallWaitSeconds = 20.0;
  static constexpr double kIdleCompany = 2.0;
  static constexpr double kMostStretch = 8.0;  // a loaded host stretches a time limit at most this much

  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(double seconds, const std::string& case_name, int ranks) {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    started_ = Clock::now();
    open_window(seconds);
    case_ = case_name;
    ranks_ = ranks;
    prefix_ = records::rollcall_prefix(case_name);
    read_from_ = file_size();
    answered_.clear();
    cv_.notify_all();
  }
  // After a local failure the other ranks may be waiting for this one in a
  // collective forever; give them a short grace to join the outcome meeting.
  void shorten(double seconds, const std::string& failure) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) failure_ = failure.substr(0, failure.find('\n'));
    const auto soon = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    failed_ = true;
    if (armed_ && soon < deadline_) {
      open_window(seconds);
      cv_.notify_all();
    }
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
    failed_ = false;
    body_done_ = false;
  }
  // This rank finished the case's code and now waits for the others.
  void body_done() {
    std::lock_guard<std::mutex> lock(mu_);
    body_done_ = true;
  }

 private:
  using Clock = std::chrono::steady_clock;

  void open_window(double seconds) {
    window_from_ = last_look_ = Clock::now();
    window_seconds_ = seconds;
    could_run_ = 0;
    deadline_ = window_from_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  // A time limit counts time the case could have run, not the clock's. At
  // each look, the time since the last one counts in full on a host no busier
  // than the case's own ranks make it, and in proportion to the case's share
  // of the cores on a busier one (CPU hogs, other graders). So a loaded host
  // never turns a slow correct case into a timeout, and a deadlock on an idle
  // host still ends after the limit (at most kMostStretch times it).
  // (Waiting ranks poll and yield, so their own run-queue time says nothing.)
  bool due() {
    const auto now = Clock::now();
    const int runnable = dtrain::platform::runnable_tasks();
    // The case's own ranks (all polling, in a deadlock) and a little company
    // (the runner, MPI's helper threads) make an idle host.
    const double idle = std::max(static_cast<double>(ranks_), cores_) + kIdleCompany;
    const double counts = runnable > idle ? idle / runnable : 1.0;
    could_run_ += std::chrono::duration<double>(now - last_look_).count() * counts;
    last_look_ = now;
    const double elapsed = std::chrono::duration<double>(now - window_from_).count();
    return could_run_ >= window_seconds_ || elapsed >= window_seconds_ * kMostStretch;  // could_run_ <= elapsed
  }

  static long file_size() {
    struct stat st {};
    return !g_results_path.empty() && ::stat(g_results_path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : 0;
  }

  // The ranks that answered this case's roll-call so far (reads only what
  // was appended since the last look).
  const std::set<int>& answered() {
    const long size = file_size();
    if (size <= read_from_) return answered_;
    const int fd = ::open(g_results_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return answered_;
    std::string text(static_cast<size_t>(size - read_from_), '\0');
    const ssize_t n = ::pread(fd, text.data(), text.size(), read_from_);
    ::close(fd);
    if (n <= 0) return answered_;
    text.resize(static_cast<size_t>(n));
    const size_t last_line = text.rfind('\n');
    if (last_line == std::string::npos) return answered_;  // a record still being written
    read_from_ += static_cast<long>(last_line + 1);
    for (size_t at = text.find(prefix_); at != std::string::npos && at < last_line; at = text.find(prefix_, at + 1))
      answered_.insert(std::atoi(text.c_str() + at + prefix_.size()));
    return answered_;
  }

  // One line: what this rank is doing, for the roll-call.
  std::string state() const {
    const std::string ledger_state = dtrain::ledger::state();
    if (failed_) return "failed (" + failure_ + "), then waited for the others; " + ledger_state;
    if (body_done_) return "finished the case " + ledger_state;
    if (ledger_state.rfind("waiting in ", 0) == 0) return ledger_state;
    const std::string function = dtrain::ledger::function_now();
    return "still running" + (function.empty() ? std::string() : " " + function) + ", in no collective; " +
           ledger_state;
  }

  [[noreturn]] void roll_call(std::unique_lock<std::mutex>& lock) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    const std::string mine = state();
    // Before answering: once every rank has answered, the job may end at any moment.
    if (!g_trace_dir.empty())
      dtrain::write_trace_part(g_trace_dir + "/" + case_ + ".rank" + std::to_string(g_rank) + ".json", g_rank);
    write_record(records::rollcall(case_, g_rank, mine, elapsed));
    if (g_results_path.empty()) {  // run bare (KIT_BARE=1): no runner will show the roll-call
      std::fprintf(stderr, "[rank %d] %s did not finish (%.1f s): %s\n", g_rank, case_.c_str(), elapsed, mine.c_str());
      if (g_rank == 0)
        std::fprintf(stderr, "The job ends here, and the cases after this one do not run. tools/kitrun without "
                             "KIT_BARE (or make test-partN) runs the remaining cases in a new job.\n");
      std::fflush(nullptr);
      // The ranks' watchdogs fire together: give the others time to say theirs before this one ends the job.
      cv_.wait_for(lock, std::chrono::seconds(1));
    }
    const auto give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(kRollCallWaitSeconds));
    while (!g_results_path.empty() && static_cast<int>(answered().size()) < ranks_ && Clock::now() < give_up)
      cv_.wait_for(lock, std::chrono::duration<double>(kPollSeconds));
    std::_Exit(124);
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      if (!armed_) {
        cv_.wait(lock);
        continue;
      }
      const auto poll = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(kPollSeconds));
      cv_.wait_until(lock, poll);
      if (!armed_ || quit_) continue;
      if (!answered().empty() || due()) roll_call(lock);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, failed_ = false, body_done_ = false, quit_ = false;
  Clock::time_point started_, deadline_, window_from_;  // the window: the case's limit, or the grace after a failure
  Clock::time_point last_look_;
  double window_seconds_ = 0, could_run_ = 0;
  const double cores_ = std::max(1u, std::thread::hardware_concurrency());
  std::string case_, prefix_;
  std::string failure_;  // the first line of this rank's first failure in the case
  int ranks_ = 1;
  long read_from_ = 0;
  std::set<int> answered_;
  std::thread thread_;
};

// gtest reports an exception as: C++ exception with description "..." thrown
// in the test body. The description is the message; say where it came from:
// the student function it left (`thrown_from`), unless the message names it.
std::string without_gtest_wrapper(const std::string& message, const std::string& thrown_from) {
  const std::string head = "C++ exception with description \"", tail = "\" thrown in the test body.";
  if (message.rfind(head, 0) != 0 || message.size() < head.size() + tail.size() ||
      message.compare(message.size() - tail.size(), tail.size(), tail) != 0)
    return message;
  const std::string what = message.substr(head.size(), message.size() - head.size() - tail.size());
  const std::string function = thrown_from.substr(0, thrown_from.find(' '));
  if (thrown_from.empty() || what.find(function) != std::string::npos) return "exception: " + what;
  return "exception in " + thrown_from + ": " + what;
}

// "[rank 2]", "[ranks 0,3]", or "[all ranks]".
std::string rank_label(const std::vector<int>& ranks, int world_size) {
  if (static_cast<int>(ranks.size()) == world_size && world_size > 1) return "[all ranks]";
  return "[" + dtrain::rank_list(ranks) + "]";
}

int usage_error(const std::string& what) {
  if (g_rank == 0) std::fprintf(stderr, "kit_tests: %s\nusage: kit_tests [gtest flags] [--results=PATH] [--case-timeout=SECONDS] [--time-scale=F] [--trace-dir=DIR] [--record=PATH]\n", what.c_str());
  return 2;
}


// ---- the per-case protocol ----

class MpiCaseListener : public ::testing::EmptyTestEventListener {
 public:
  // `groups`: for each rank count the cases need, the communicator of ranks
  // 0..n-1 (a rank runs only the cases whose group it belongs to).
  MpiCaseListener(dtrain::Communicator& world, std::map<int, dtrain::Communicator>& groups, double timeout_override,
                  double time_scale, std::string trace_dir)
      : world_(world), groups_(groups), timeout_override_(timeout_override), time_scale_(time_scale),
        trace_dir_(std::move(trace_dir)) {}

  int passed() const { return passed_; }
  int failed() const { return failed_; }

  void OnTestProgramStart(const ::testing::UnitTest& unit) override {
    if (g_rank != 0) return;
    std::vector<std::string> cases;
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const auto* suite = unit.GetTestSuite(i);
      for (int j = 0; j < suite->total_test_count(); ++j) {
        const auto* info = suite->GetTestInfo(j);
        if (info->should_run()) cases.push_back(std::string(info->test_suite_name()) + "." + info->name());
      }
    }
    write_record(seal_record(records::plan(world_.size(), cases)));
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    name_ = std::string(info.test_suite_name()) + "." + info.name();
    messages_.clear();
    arm_abort_prefix(name_);
    g_in_case = 1;
    const TableRun* run = run_of(name_);  // main checked that every selected case has one
    const double limit = timeout_override_ > 0 ? timeout_override_ : run->case_seconds * time_scale_;
    meeting_ = &groups_.at(run->ranks);
    // Ranks of the group may still be busy with cases of a smaller group: wait asleep.
    dtrain::CommAccess::rendezvous(*meeting_);
    start_ = dtrain::CommAccess::wall_time();
    case_world() = std::make_unique<dtrain::Communicator>(dtrain::CommAccess::duplicate(*meeting_));
    dtrain::CommAccess::set_name(*case_world(), "world");
    dtrain::ledger::begin_case();
    dtrain::ledger::take_thrown_from();  // an exception of an earlier case, caught there
    if (g_rank == 0) {
      std::printf("[ RUN      ] %s\n", name_.c_str());
      std::fflush(stdout);
    }
    watchdog_.arm(limit, name_, run->ranks);
  }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::string where;
    if (result.file_name() && std::strcmp(result.file_name(), "unknown file") != 0)
      where = std::string(result.file_name()) + ":" + std::to_string(result.line_number()) + ": ";
    const std::string what = without_gtest_wrapper(result.message(), dtrain::ledger::take_thrown_from());
    std::string text = where + what;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    messages_ += (messages_.empty() ? "" : "\n") + text;
    write_record(records::rank_failure(name_, g_rank, text));
    watchdog_.shorten(kFailedGraceSeconds, what);
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    watchdog_.body_done();
    if (const int stray = end_stray_processes(); stray > 0)
      messages_ += std::string(messages_.empty() ? "" : "\n") + "the case started " + std::to_string(stray) +
                   " process(es) and left them running; they were killed (code under test may not start processes)";
    if (info.result()->Skipped() && messages_.empty())
      messages_ = "the case was skipped; a skipped case counts as failed";
    // The max is a full synchronization: no rank leaves a case before every
    // rank has finished it, so a rank stuck in a collective is caught here.
    const bool any_failed = dtrain::CommAccess::max_over_ranks(*meeting_, messages_.empty() ? 0 : 1) != 0;
    const auto texts = any_failed ? dtrain::CommAccess::gather_text(*meeting_, messages_, 0)
                                  : std::vector<std::string>(static_cast<size_t>(meeting_->size()));
    if (any_failed && !trace_dir_.empty())
      dtrain::write_trace(*meeting_, trace_dir_ + "/" + name_ + ".json", case_world()->bytes_transferred());
    watchdog_.disarm();
    case_world().reset();
    g_in_case = 0;
    if (g_rank != 0) return;
    const double seconds = dtrain::CommAccess::wall_time() - start_;
    std::vector<std::pair<int, std::string>> failures;
    std::vector<std::pair<std::string, std::vector<int>>> grouped;  // identical messages, with their ranks
    for (size_t r = 0; r < texts.size(); ++r) {
      if (texts[r].empty()) continue;
      failures.emplace_back(static_cast<int>(r), texts[r]);
      auto same = std::find_if(grouped.begin(), grouped.end(), [&](const auto& g) { return g.first == texts[r]; });
      if (same == grouped.end()) same = grouped.insert(grouped.end(), {texts[r], {}});
      same->second.push_back(static_cast<int>(r));
    }
    std::string shown;
    for (const auto& [text, ranks] : grouped) {
      std::stringstream lines(text);
      std::string line;
      const std::string label = rank_label(ranks, meeting_->size());
      bool first = true;
      while (std::getline(lines, line)) {
        shown += "    " + (first ? label : std::string(label.size(), ' ')) + " " + line + "\n";
        first = false;
      }
    }
    const bool ok = failures.empty();
    (ok ? passed_ : failed_)++;
    write_record(seal_record(records::result(name_, ok, seconds, failures)));
    std::printf("%s%s%s (%.0f ms)\n", shown.c_str(), ok ? "[       OK ] " : "[  FAILED  ] ", name_.c_str(),
                seconds * 1000);
    std::fflush(stdout);
  }

 private:
  dtrain::Communicator& world_;
  std::map<int, dtrain::Communicator>& groups_;
  dtrain::Communicator* meeting_ = nullptr;  // the running case's group, where its ranks meet afterwards
  double timeout_override_;
  double time_scale_;
  std::string trace_dir_;
  Watchdog watchdog_;
  std::string name_, messages_;
  double start_ = 0;
  int passed_ = 0, failed_ = 0;
};

}  // namespace
}  // namespace harness

int main(int argc, char** argv) {
  using namespace harness;
  dtrain::MpiSession mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  dtrain::Communicator meeting = dtrain::CommAccess::duplicate_world();
  g_rank = meeting.rank();

  std::string results_path, trace_dir;
  double timeout_override = 0, time_scale = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--results=", 0) == 0) {
      results_path = arg.substr(10);
    } else if (arg.rfind("--trace-dir=", 0) == 0) {
      trace_dir = arg.substr(12);
    } else if (arg.rfind("--record=", 0) == 0) {
      kit::record_values_to(arg.substr(9));
    } else if (arg.rfind("--case-timeout=", 0) == 0) {
      char* end = nullptr;
      timeout_override = std::strtod(arg.c_str() + 15, &end);
      if (*end != '\0' || timeout_override <= 0) return usage_error("--case-timeout needs a positive number of seconds, got '" + arg.substr(15) + "'");
    } else if (arg.rfind("--time-scale=", 0) == 0) {
      char* end = nullptr;
      time_scale = std::strtod(arg.c_str() + 13, &end);
      if (*end != '\0' || !(time_scale > 0 && time_scale <= 1))
        return usage_error("--time-scale needs a factor in (0, 1], got '" + arg.substr(13) + "'");
    } else {
      return usage_error("unknown argument '" + arg + "'");
    }
  }
  if (!results_path.empty()) {
    g_results_fd = ::open(results_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (g_results_fd < 0) return usage_error("cannot open --results file '" + results_path + "': " + std::strerror(errno));
    g_results_path = results_path;
  }
  // Every collective of a case is checked against the other ranks' before
  // MPI sees it (comm.h), and kept for the trace of a failing case if asked.
  dtrain::ledger::set_checking(true);
  g_trace_dir = trace_dir;
  if (!trace_dir.empty()) dtrain::start_trace(meeting);

  // Which rank counts do the selected cases need, and which of them run on
  // this rank? Cases of n ranks run on ranks 0..n-1 of the job, so one job
  // runs cases of every size; gtest's filter, set per rank, skips the rest.
  const std::string filter = GTEST_FLAG_GET(filter);
  std::map<int, std::vector<std::string>> needed;  // ranks -> suites
  std::string mine;                                // this rank's cases, as a gtest filter
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const auto* suite = unit.GetTestSuite(i);
    for (int j = 0; j < suite->total_test_count(); ++j) {
      const std::string name = std::string(suite->name()) + "." + suite->GetTestInfo(j)->name();
      if (!selected_by_filter(filter, name)) continue;
      const TableRun* second = nullptr;
      const TableRun* run = run_of(name, &second);
      if (run == nullptr) return usage_error("no run of the parts table (kit/parts.py) selects " + name);
      if (second != nullptr)
        return usage_error("two runs of the parts table (kit/parts.py) select " + name + ": '" + run->filter +
                           "' and '" + second->filter + "'; make their filters name whole suites");
      auto& names = needed[run->ranks];
      if (std::find(names.begin(), names.end(), suite->name()) == names.end()) names.push_back(suite->name());
      if (g_rank < run->ranks) mine += (mine.empty() ? "" : ":") + name;
    }
  }
  if (needed.empty()) return usage_error("no case matches --gtest_filter='" + filter + "'");
  if (needed.rbegin()->first > meeting.size()) {
    if (g_rank == 0) {
      std::fprintf(stderr, "kit_tests: this run has %d rank%s, but the selected cases need:\n", meeting.size(),
                   meeting.size() == 1 ? "" : "s");
      for (const auto& [ranks, names] : needed) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        std::fprintf(stderr, "  %d rank%s for %s\n", ranks, ranks == 1 ? "" : "s", list.c_str());
      }
      std::fprintf(stderr, "Start it with tools/kitrun -n %d, or use `make test-partN`, which does.\n",
                   needed.rbegin()->first);
    }
    return 2;
  }
  // The ranks 0..n-1 of each size, split off once: cases of n ranks meet there.
  std::map<int, dtrain::Communicator> groups;
  for (const auto& entry : needed) {
    const int size = entry.first;
    groups.emplace(size, meeting.split(g_rank < size ? 0 : 1, g_rank));
  }
  GTEST_FLAG_SET(filter, mine.empty() ? "-*" : mine);

  dtrain::keep_big_blocks_for_reuse();
  dtrain::platform::adopt_orphans();  // a case's orphans come back to us, not to init
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal_signal);
  std::atexit(on_exit_inside_case);
  std::at_quick_exit(on_exit_inside_case);

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  auto* listener = new MpiCaseListener(meeting, groups, timeout_override, time_scale, trace_dir);
  listeners.Append(listener);  // gtest owns it from here

  const int gtest_status = RUN_ALL_TESTS();
  dtrain::CommAccess::rendezvous(meeting);  // ranks done early sleep here, not spin
  const long any_failed = dtrain::CommAccess::max_over_ranks(meeting, gtest_status != 0 ? 1 : 0);
  if (g_rank == 0 && g_results_fd < 0) {  // the runner prints one summary of its own
    std::printf("%d passed, %d failed\n", listener->passed(), listener->failed());
    std::fflush(stdout);
  }
  return any_failed ? 1 : 0;
}
