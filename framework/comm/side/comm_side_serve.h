// comm_side_serve.h: how a rank's MPI side reads requests and sends answers
// (comm_link.h), for the one program it serves, or, in the driven mode, for
// the two: the kit's harness and the student's process.
//
// The driven mode (framework/calls/driven.h): the harness runs the cases,
// and the student's code runs in a process of its own that only carries out
// calls. The side stands between them: a Call from the harness goes to the
// student's process as the answer to its Serve, every request that process
// makes until its next Serve is the call's (the side's account places it
// there by construction, under the name the harness gave), and that Serve's
// data answers the Call. The student's process can send no kind of the
// harness's (link::harness_only): a case, a mark, a salt, a text; nor a
// request outside a call. Either is an anomaly, recorded in the side's
// account, which fails the job.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm_link.h"
#include "comm_side_ops.h"

namespace dtrain::side {

// One process the side serves, at the other end of one link.
struct Peer {
  int fd = -1;
  pid_t pid = -1;
  bool direct = true;           // the side copies its large buffers itself (comm_link.h)
  bool asked_emulator = false;  // whether its being emulated was asked yet
  const char* who = "program";  // for the side's messages
};

// One request, read whole: its header and its data (inline, or copied from the peer).
struct Incoming {
  link::Header h{};
  std::vector<char> in;
  bool room = true;             // false: no memory for its data (read past, answered so)
  bool resend = false;          // the data could not be copied: the peer sends it again inline
  bool outside = false;         // its data's address is not the peer's memory
};

// Reads the next request; false once the peer is gone. An Enter mark (no
// answer) is handed on with its name as its data.
bool read_request(Peer& peer, Incoming& r);

// Sends `answer` for `h`, placing its data in the peer's memory where the
// request asked and may; false once the peer is gone.
bool send_answer(Peer& peer, const link::Header& h, Answer& answer);

// The answer to a request already read (Finalize excepted): Ops carries it
// out, and whatever it throws is the peer's error.
Answer carry_out(Ops& ops, Peer& peer, Incoming& r);

// An answer that refuses, with its reason as data.
Answer refusal(link::Status status, const std::string& why);

// The side's whole life with one program (the kit's usual mode): serves it
// until it finalizes or is gone. `finalize` ends MPI; `ended` waits for the
// program and ends the side as it ended.
[[noreturn]] void serve_program(Ops& ops, Traffic& traffic, Peer& program, void (*finalize)(Ops&),
                                void (*ended)(pid_t));

// The driven mode: serves the harness and the student's process until the
// harness finalizes, then ends the student's process; as serve_program.
[[noreturn]] void serve_driven(Ops& ops, Traffic& traffic, Peer& harness, Peer& student, void (*finalize)(Ops&),
                               void (*ended)(pid_t));

}  // namespace dtrain::side
