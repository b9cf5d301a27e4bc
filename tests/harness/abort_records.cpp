// abort_records.cpp: abort records from signal handlers and exit hooks
// (abort_records.h). Everything here after a signal is async-signal-safe.
#include "abort_records.h"
#include "comm_runtime.h"
#include "crash_words.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "call_context.h"
#include "job.h"
#include "parts_table.h"  // the data limit (kit/limits.py)
#include "records.h"

namespace harness {

namespace {

// What the handlers need, copied here before any case runs: plain data,
// which a signal handler may read (job() is a function-local static).
char g_abort_prefix[1024];  // records::abort_prefix of the running case
char g_case_name[512];      // the same case, for a run by hand (no record channel)
int g_results_fd = -1;
int g_rank = 0;
volatile sig_atomic_t g_in_case = 0;

void arm_abort_prefix(const std::string& name) {
  g_results_fd = job().results_fd;
  g_rank = job().rank;
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

// "572.2": bytes in MiB with one decimal, async-signal-safe.
void mib(char* out, std::size_t size, std::int64_t bytes) {
  const std::int64_t tenths = (std::max<std::int64_t>(bytes, 0) * 10 + (1 << 19)) >> 20;
  char digits[24], *d = digits + sizeof digits;
  *--d = '\0';
  *--d = static_cast<char>('0' + tenths % 10);
  *--d = '.';
  for (std::int64_t whole = tenths / 10;; whole /= 10) {
    *--d = static_cast<char>('0' + whole % 10);
    if (whole < 10) break;
  }
  join(out, size, {d});
}

// Async-signal-safe: only memcpy/strlen/write. With no record channel (a run
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
    const char* why = dtrain::crash_words(sig);
    // Which student function it happened in (the ledger's, readable here),
    // and whether the memory budget had refused it a block (malloc's null).
    const char* function = dtrain::ledger::function_now_signal_safe();
    char budget[400] = "";
    if (const auto refusal = dtrain::heap_budget::peek(); refusal.happened) {
      char words[360];
      budget_refusal_text(words, sizeof words, refusal);
      join(budget, sizeof budget, {", after it went ", words});
    }
    char text[800];
    join(text, sizeof text, {why, function ? " in " : "", function ? function : "", budget});
    write_abort(text);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_exit_inside_case() {
  if (g_in_case) write_abort(dtrain::kExitedWords);
}

}  // namespace

void budget_refusal_text(char* out, std::size_t size, const dtrain::heap_budget::Refusal& refusal) {
  char asked[24], held[24], budget[24], limit[24];
  mib(asked, sizeof asked, refusal.asked);
  mib(held, sizeof held, refusal.held);
  mib(budget, sizeof budget, dtrain::heap_budget::bytes());
#ifdef KIT_DRIVEN
  // The student's code ran in a process of its own, with the rank's limit less the harness's share.
  mib(limit, sizeof limit, kStudentProcessDataLimitBytes);
  const char* memory = "the memory of the process that runs a rank's student code";
  const char* private_memory = "the private memory of the process that runs a rank's student code";
#else
  mib(limit, sizeof limit, kRankDataLimitBytes);
  const char* memory = "a rank's memory";
  const char* private_memory = "a rank's private memory";
#endif
  if (refusal.rule != nullptr) {
    join(out, size, {"refused by the system-call filter: ", refusal.function, " asked for ", refusal.rule, " of ",
                     asked, " MiB, which the data limit would not count; all of ", memory, " is private memory "
                     "within ", limit, " MiB, on every machine (handout: Memory)"});
    return;
  }
  if (refusal.by_system) {
    join(out, size, {"out of memory: ", refusal.function, " asked for a block of ", asked, " MiB and the system "
                     "refused it; ", private_memory, " (its heap, mappings and thread stacks) may reach ", limit,
                     " MiB, on every machine (handout: Memory)"});
    return;
  }
  join(out, size, {"over its memory budget: ", refusal.function, " asked for a block of ", asked, " MiB while the rank "
                   "held ", held, " MiB; a rank may hold ", budget, " MiB of heap at once, on every machine "
                   "(handout: Memory)"});
}

void install_abort_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal_signal);
  std::atexit(on_exit_inside_case);
  std::at_quick_exit(on_exit_inside_case);
}

void case_begins(const std::string& name) {
  arm_abort_prefix(name);
  g_in_case = 1;
}

void case_ends() { g_in_case = 0; }

void student_process_ended(const std::string& why) {
  write_abort(why.c_str());
  dtrain::MpiSession::abort_job(70);
}

}  // namespace harness
