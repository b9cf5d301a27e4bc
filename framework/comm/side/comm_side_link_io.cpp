// comm_side_link_io.cpp: the side's end of one link (comm_side_serve.h):
// a request read whole, its data copied from the peer where it lies there;
// an answer sent, its data placed in the peer where the request asked; and
// a request carried out, whatever it throws the peer's error.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <new>
#include <stdexcept>

#include "comm_side_serve.h"
#include "parts_table.h"  // the side's data limit (kit/limits.py)

namespace dtrain::side {

namespace {

// The largest request the side reads: a rank's whole data limit in one buffer is more than any case needs.
constexpr std::uint64_t kMostRequestBytes = std::uint64_t(1) << 30;

bool read_all(int fd, void* data, std::size_t n) { return link::move_all(false, fd, data, n); }

enum class Copied { Done, Refused, Outside };

Copied copy_peer(const Peer& peer, bool to_peer, std::uint64_t at, void* data, std::size_t n) {
  iovec here{data, n}, there{reinterpret_cast<void*>(static_cast<std::uintptr_t>(at)), n};
  const ssize_t k = to_peer ? ::process_vm_writev(peer.pid, &here, 1, &there, 1, 0)
                            : ::process_vm_readv(peer.pid, &here, 1, &there, 1, 0);
  if (k == static_cast<ssize_t>(n)) return Copied::Done;
  if (k < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS)) return Copied::Refused;
  return Copied::Outside;
}

std::string no_room(std::uint64_t bytes) {
  return "the rank's MPI side has no room for a call of " + std::to_string(bytes) + " bytes (it holds at most " +
         std::to_string(harness::kSideDataLimitBytes >> 20) + " MiB: a call of the assignment's moves a few MiB)";
}

}  // namespace

Answer refusal(link::Status status, const std::string& why) {
  Answer a;
  a.reply.status = status;
  a.data.assign(why.begin(), why.end());
  return a;
}

bool read_request(Peer& peer, Incoming& r) {
  r = Incoming{};
  if (!read_all(peer.fd, &r.h, sizeof r.h)) return false;
  if (r.h.in_bytes > kMostRequestBytes) {
    std::fprintf(stderr, "kit_mpi_side: a request of %llu bytes: the %s broke its link\n",
                 static_cast<unsigned long long>(r.h.in_bytes), peer.who);
    return false;
  }
  const bool inline_data = r.h.in_at == 0;
  if (!link::answered(r.h.kind)) {  // an Enter mark: its name always inline
    r.in.resize(inline_data ? r.h.in_bytes : 0);
    return r.in.empty() || read_all(peer.fd, r.in.data(), r.in.size());
  }
  try {
    r.in.resize(r.h.in_bytes);
  } catch (const std::bad_alloc&) {
    r.room = false;  // read past, then answered so
    char sink[1 << 16];
    for (std::uint64_t left = inline_data ? r.h.in_bytes : 0; left > 0;) {
      const std::size_t n = left < sizeof sink ? static_cast<std::size_t>(left) : sizeof sink;
      if (!read_all(peer.fd, sink, n)) return false;
      left -= n;
    }
    return true;
  }
  if (inline_data && !r.in.empty() && !read_all(peer.fd, r.in.data(), r.in.size())) return false;
  // An emulated peer's addresses are the emulator's to translate, each
  // process its own way: asked once, when the peer (by then started) first names one.
  if ((!inline_data || r.h.out_at != 0) && !peer.asked_emulator) {
    peer.asked_emulator = true;
    if (emulated(peer.pid)) peer.direct = false;
  }
  if (inline_data) return true;
  if (!peer.direct) {
    r.resend = true;
    return true;
  }
  const Copied fetched = copy_peer(peer, false, r.h.in_at, r.in.data(), r.in.size());
  if (fetched == Copied::Refused) peer.direct = false;
  r.resend = fetched == Copied::Refused;
  r.outside = fetched == Copied::Outside;
  return true;
}

bool send_answer(Peer& peer, const link::Header& h, Answer& answer) {
  answer.reply.out_bytes = answer.data.size() + answer.tail.size();
  if (answer.reply.status == link::Status::Ok && h.out_at != 0 && peer.direct && !answer.data.empty() &&
      answer.tail.empty() && answer.data.size() <= h.out_capacity) {
    const Copied placed = copy_peer(peer, true, h.out_at, answer.data.data(), answer.data.size());
    if (placed == Copied::Done) answer.reply.placed = 1;
    if (placed == Copied::Refused) peer.direct = false;  // this answer, and all after it, inline
    if (placed == Copied::Outside) {
      answer = refusal(link::Status::BadArgument, "the kit's MPI side could not place an answer: its buffer is not "
                                                  "all in the program's memory");
      answer.reply.out_bytes = answer.data.size();
    }
  }
  const bool inline_data = answer.reply.placed == 0;
  iovec parts[3] = {{&answer.reply, sizeof answer.reply},
                    {answer.data.data(), inline_data ? answer.data.size() : 0},
                    {answer.tail.data(), inline_data ? answer.tail.size() : 0}};
  return link::send_parts(peer.fd, parts, 3);
}

Answer carry_out(Ops& ops, Peer& peer, Incoming& r) {
  (void)peer;
  if (!r.room) return refusal(link::Status::Failed, no_room(r.h.in_bytes));
  if (r.resend) {
    Answer again;  // carried out by nothing: the peer sends it again inline
    again.reply.status = link::Status::Resend;
    return again;
  }
  if (r.outside)
    return refusal(link::Status::BadArgument, "the kit's MPI side refused a request: its data is not all in the "
                                              "program's memory");
  try {
    return ops.handle(r.h, r.in);
  } catch (const std::bad_alloc&) {
    return refusal(link::Status::Failed, no_room(r.h.in_bytes));
  } catch (const std::invalid_argument& e) {
    return refusal(link::Status::BadArgument, e.what());
  } catch (const std::exception& e) {
    return refusal(link::Status::Failed, e.what());
  }
}

}  // namespace dtrain::side
