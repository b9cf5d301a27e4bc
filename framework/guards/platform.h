// platform.h: the calls of the student loop (the test harness, the memory
// rule, the trainers' memory report) that only Linux offers, in one place.
// A port to another system (macOS natively, for one) replaces
// platform_linux.cpp and syscall_filter.cpp with calls that do what each comment below says.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dtrain::platform {

// Orphans of the processes a case starts come back to this process, not to
// init, so that none can outlive the case (PR_SET_CHILD_SUBREAPER).
void adopt_orphans();

// Every process below `pid`, from one pass over the process table.
std::vector<pid_t> descendants(pid_t pid);

// Tasks ready to run on the host now, not counting the caller; 0 where the
// system doesn't say (the watchdog then counts wall-clock time).
int runnable_tasks();

// No other process of this user may read this one's memory or attach to it
// (it holds the results key).
void forbid_reading_memory();

// The calling thread's stack as "file:line", innermost first, inlined calls
// included, for the frames that have line information; empty where it can't
// be read (a binary the process may not read, as in the grader's sandbox).
// Slow (binutils' addr2line): for failure paths only.
std::vector<std::string> call_stack_lines();

// From now on, in every thread of this process, refuse the system calls that
// computing and the channels already open never need: opening files,
// starting processes or programs, sockets, other processes' memory, new
// executable memory, memory the data limit would not count, kernel objects
// that outlive the process, ... (the list and why: syscall_filter.cpp). A
// refused mapping that grows down is kept for the case's message
// (heap_watch.h, heap_budget: a refusal with its rule). It can't be
// undone. `allow_opening_files` keeps open/openat, for a writer that makes
// files as it goes (the trace of each failing case). Returns "" when the
// filter is in place, else why it is not (an old kernel, another system):
// the caller must say so, never go on silently.
std::string restrict_system_calls(bool allow_opening_files);

// From now on, this process's private memory (heap, private mappings and
// thread stacks: what RLIMIT_DATA counts) may not grow past `bytes`, and
// nothing in the process can raise the limit again. Below any lower limit
// already set (the grader's sandbox sets the same one from outside).
void limit_private_memory(long long bytes);
// That limit now, for a message; -1 where there is none.
long long private_memory_limit();
// The same for the main thread's stack (RLIMIT_STACK), the one private
// memory RLIMIT_DATA does not count.
void limit_main_stack(long long bytes);
// Threads started from now on without a size of their own get stacks of
// `bytes` (glibc's default is RLIMIT_STACK's, often 8 MiB, all of it counted
// by the data limit). False where the system has no such default.
bool set_thread_stack_size(long long bytes);

// glibc's malloc tuning: blocks up to `mmap_threshold` come from the heap, and
// up to `trim_threshold` of freed memory stays for reuse (layer_profiler.h).
void tune_malloc(long mmap_threshold, long trim_threshold);
// Gives every free page of glibc's heap back to the kernel (malloc_trim), so
// that the kernel's count of the process's memory is what it holds.
void release_free_memory();

}  // namespace dtrain::platform
