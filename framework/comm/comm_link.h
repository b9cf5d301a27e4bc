// comm_link.h: the channel between a rank's two processes. The rank's MPI side
// (framework/comm/side/, the program the launcher starts) holds MPI; it
// starts the kit's program, which holds the student's code, as its child,
// with no MPI at all. Every call of a Communicator is one request over the
// link, which the side carries out and answers. So the traffic a rank makes
// is known to a process the student's code cannot write (the side keeps
// its own account of it, side/traffic.h), and no student code can reach MPI.
// The trainers, which no one grades, link the side's work into their own
// process instead (side/comm_link_in_process.cpp): the same requests, carried
// out as function calls, with no second process to wake per collective.
//
// A request is a Header, then `in_bytes` bytes of data (the source buffer,
// or text); an answer is a Reply, then `out_bytes` bytes (the destination
// buffer, or, when status is not Ok, the error's text). What each kind of
// request asks, and what its answer says, are named fields (h.ask.split.color,
// reply.answer.made.rank), defined once in kit/link.py, which CMake writes
// into link_messages.h. Communicators and requests are numbers the side
// gave out; the side checks every number and size it is sent before using it.
//
// A large buffer need not cross the socket: a request may name where its
// data lies in the child (`in_at`) and where the answer's goes (`out_at`,
// at most `out_capacity` bytes), and the side copies them itself with
// process_vm_readv and process_vm_writev: one copy each way, with no
// chunks through the socket's buffer and no wakeup per chunk. The side may
// do this to its own child (its descendant, whose user it is); the child
// can't do it back (the side is not dumpable). Where the system refuses it
// (a container's filter, an emulator), the side answers Resend once and
// the child sends its data inline from then on.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "link_messages.h"  // generated from kit/link.py: the kinds, and each one's fields

namespace dtrain::link {

// How a waiting side spends the wait (side/comm_side_mpi.h explains each).
enum class Idle : std::int32_t { Yield = 0, Sleep = 1 };

inline constexpr int kAgreeFields = 6;
// one_rank of an Allreduce, Allgather or ReduceScatter on a one-rank communicator:
// no data either way (the result is the input, copied by the child); the
// side checks the size and counts the call.
inline constexpr std::int64_t kOneRank = 1;

struct Header {
  Kind kind;
  std::int32_t comm;
  Asked ask;  // the fields the kind asks, by its name (link_messages.h)
  std::uint64_t in_bytes;
  std::uint64_t in_at;         // the data's address in the child, or 0: inline after the header
  std::uint64_t out_at;        // where the answer's data may go in the child, or 0: inline after the reply
  std::uint64_t out_capacity;  // the bytes there
};

// Resend: the side can't copy from or to the child's memory here; the same
// request goes again with its data inline (it was not carried out).
enum class Status : std::int32_t { Ok = 0, Failed = 1, BadArgument = 2, Resend = 3 };

struct Reply {
  Status status;
  std::int32_t comm;
  Answered answer;  // the fields the kind's answer says, by its name (link_messages.h)
  std::uint64_t out_bytes;
  std::int32_t placed;  // 1: the side wrote the out_bytes at the request's out_at; none follow the reply
  std::int32_t unused;
};

// Buffers from this size on are copied by the side (above); smaller ones
// ride in the same write as their header, which costs less than a system
// call of their own.
inline constexpr std::size_t kDirectBytes = 16 << 10;

// The side's file descriptors for the link and the control pipe, as the
// child's environment names them.
inline constexpr const char* kEnvVariable = "KIT_MPI_LINK";

// Moves `n` bytes whole through read (out: false) or write, across
// interruptions; false once the other end is gone. Both ends use it.
inline bool move_all(bool out, int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = out ? ::write(fd, p, n) : ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// Writes `n` parts in as few calls as the socket takes: a header and its
// data (and any Enter marks ahead of them) wake the other end once, not
// once each (two context switches a part, on a machine where ranks
// outnumber cores).
inline bool send_parts(int fd, iovec* parts, int n) {
  int first = 0;
  while (first < n && parts[first].iov_len == 0) ++first;
  while (first < n) {
    const ssize_t k = ::writev(fd, parts + first, n - first);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    std::size_t done = static_cast<std::size_t>(k);
    while (first < n && done >= parts[first].iov_len) done -= parts[first++].iov_len;
    if (first < n) {
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + done;
      parts[first].iov_len -= done;
    }
  }
  return true;
}

inline bool send_both(int fd, const void* head, std::size_t head_n, const void* data, std::size_t data_n) {
  iovec parts[2] = {{const_cast<void*>(head), head_n}, {const_cast<void*>(data), data_n}};
  return send_parts(fd, parts, 2);
}

// A request of `kind` on `comm`, every field zero: the caller fills those
// its kind asks (h.ask.split.color, ...).
inline Header request(Kind kind, std::int32_t comm = 0) {
  Header h{};
  h.kind = kind;
  h.comm = comm;
  return h;
}

// The child's end (comm_link_client.cpp). False when this process was not
// started by an MPI side.
bool available();
// One request and its answer. `out`/`out_capacity`: where the answer's data
// goes (an answer longer than that is a broken side); `text`, if given,
// takes the data instead. Throws std::runtime_error (Failed) or
// std::invalid_argument (BadArgument) with the side's text.
Reply call(const Header& request, const void* in, void* out, std::size_t out_capacity, std::string* text = nullptr);
// A student call begins (Kind::Enter): the mark waits, and goes out ahead
// of the next request, in its write. Names longer than kMostNameBytes are cut.
void enter(const char* function, std::int64_t argument);
inline constexpr std::size_t kMostNameBytes = 64;
// Asks the side to end every rank of the job (MPI_Abort) and does not return.
[[noreturn]] void abort_job(int exit_code);

}  // namespace dtrain::link
