// comm_link_client.cpp: the child's end of the link to its MPI side (comm_link.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_link.h"

// The trainers compile this file a second time into their own link
// (side/comm_link_in_process.cpp), as link::socket, for a run under a side.
#ifdef KIT_LINK_CLIENT_NS
namespace dtrain::link::KIT_LINK_CLIENT_NS {
#else
namespace dtrain::link {
#endif

namespace {

struct Ends {
  int link = -1, control = -1;
};

Ends read_ends() {
  Ends e;
  const char* value = std::getenv(kEnvVariable);
  if (value == nullptr || std::sscanf(value, "%d,%d", &e.link, &e.control) != 2) return Ends{};
  return e;
}

const Ends& ends() {
  static const Ends e = read_ends();
  return e;
}

[[noreturn]] void side_gone(const char* what) {
  // The side ends the job when it fails; a child that lost it has nothing left to do.
  std::fprintf(stderr, "kit: the rank's MPI side is gone (%s: %s)\n", what, std::strerror(errno));
  std::_Exit(70);
}

void read_all(int fd, void* data, std::size_t n) {
  if (!move_all(false, fd, data, n)) side_gone("reading an answer");
}

}  // namespace

bool available() { return ends().link >= 0; }

namespace {

// One request at a time: a thread's answer is read before another's request goes out.
std::mutex& link_mutex() {
  static std::mutex& mu = *new std::mutex;  // never destroyed: the watchdog may call at exit
  return mu;
}

// Enter marks not sent yet, each a Header and its name (with link_mutex held).
std::string& pending_marks() {
  static std::string& marks = *new std::string;
  return marks;
}

}  // namespace

void enter(const char* function, std::int64_t argument) {
  if (!available()) return;
  Header h = request(Kind::Enter);
  h.ask.enter.argument = argument;
  h.in_bytes = std::min(std::strlen(function), kMostNameBytes);
  const std::lock_guard<std::mutex> lock(link_mutex());
  pending_marks().append(reinterpret_cast<const char*>(&h), sizeof h).append(function, h.in_bytes);
}

Reply call(const Header& request, const void* in, void* out, std::size_t out_capacity, std::string* text) {
  if (!available())
    throw std::runtime_error(
        "this program was not started by the kit's MPI side: start it with tools/kitrun (make train, make test, ...)");
  const std::lock_guard<std::mutex> lock(link_mutex());
  static bool direct = true;  // until the side says it can't copy here (comm_link.h)
  Header h = request;
  h.in_at = h.out_at = h.out_capacity = 0;
  if (direct && h.in_bytes >= kDirectBytes) h.in_at = reinterpret_cast<std::uintptr_t>(in);
  if (direct && text == nullptr && out_capacity >= kDirectBytes) {
    h.out_at = reinterpret_cast<std::uintptr_t>(out);
    h.out_capacity = out_capacity;
  }
  Reply reply{};
  for (;;) {
    std::string& marks = pending_marks();
    iovec parts[3] = {{marks.data(), marks.size()}, {&h, sizeof h}, {const_cast<void*>(in), h.in_at != 0 ? 0 : h.in_bytes}};
    if (!send_parts(ends().link, parts, 3)) side_gone("writing a request");
    marks.clear();
    read_all(ends().link, &reply, sizeof reply);
    if (reply.status != Status::Resend) break;
    if (!direct) side_gone("a second refusal of direct copies");
    direct = false;
    h.in_at = h.out_at = h.out_capacity = 0;
  }
  if (reply.placed != 0) {
    if (h.out_at == 0 || reply.status != Status::Ok || reply.out_bytes > out_capacity)
      side_gone("an answer placed where none was asked for");
    return reply;
  }
  if (reply.status != Status::Ok || text != nullptr) {
    std::string data;
    try {
      data.resize(reply.out_bytes);
    } catch (const std::bad_alloc&) {
      // More than this process can hold (a driven call's answer, which the
      // student's code sized): read past it, so the link stays in step, and fail the call.
      char sink[1 << 16];
      for (std::uint64_t left = reply.out_bytes; left > 0;) {
        const std::size_t n = left < sizeof sink ? static_cast<std::size_t>(left) : sizeof sink;
        read_all(ends().link, sink, n);
        left -= n;
      }
      throw std::runtime_error("an answer of " + std::to_string(reply.out_bytes) +
                               " bytes, more than this process's memory holds");
    }
    if (!data.empty()) read_all(ends().link, data.data(), data.size());
    if (reply.status == Status::BadArgument) throw std::invalid_argument(data);
    if (reply.status != Status::Ok) throw std::runtime_error(data);
    *text = std::move(data);
    return reply;
  }
  if (reply.out_bytes > out_capacity) side_gone("an answer longer than asked for");
  if (reply.out_bytes > 0) read_all(ends().link, out, reply.out_bytes);
  return reply;
}

void abort_job(int exit_code) {
  if (ends().control >= 0) {
    const std::int32_t code = exit_code;
    if (::write(ends().control, &code, sizeof code) == sizeof code) {
      // The side ends the job, this process with it.
      for (;;) ::pause();
    }
  }
  std::_Exit(exit_code);
}

}  // namespace dtrain::link (or its KIT_LINK_CLIENT_NS)
