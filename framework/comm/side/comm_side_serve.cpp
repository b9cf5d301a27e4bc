// comm_side_serve.cpp: the side's loops, with one program or with the
// harness and the student's process (comm_side_serve.h); one link's reads
// and answers are comm_side_link_io.cpp's.
#include "comm_side_serve.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "comm_side_child.h"

namespace dtrain::side {

namespace {

// A Call's answer: the side's findings of the call first (side_bytes), then `values`, the student's process's.
void with_findings(Ops& ops, Answer& answer, std::vector<char> values) {
  const std::vector<std::int64_t> findings = ops.take_findings();
  const auto* bytes = reinterpret_cast<const char*>(findings.data());
  answer.data.assign(bytes, bytes + findings.size() * sizeof(std::int64_t));
  answer.tail = std::move(values);
  answer.reply.answer.call.side_bytes = static_cast<std::int64_t>(findings.size() * sizeof(std::int64_t));
}

[[noreturn]] void wait_for_the_end() {
  // The peer is gone; the control thread ends the side as the program ended.
  for (;;) pause();
}

// The harness's Call answered: the student's process is gone (how, in the findings).
void tell_gone(Ops& ops, Peer& harness, const link::Header& call) {
  Answer gone;
  gone.reply.answer.call.outcome = static_cast<std::int64_t>(link::Outcome::Gone);
  with_findings(ops, gone, {});
  if (!send_answer(harness, call, gone)) wait_for_the_end();
}

// Serves one request of `peer` that is not a Finalize; false once the peer is gone.
bool serve_one(Ops& ops, Traffic& traffic, Peer& peer, Incoming& r) {
  if (!link::answered(r.h.kind)) {
    const std::string name(r.in.begin(), r.in.end());
    traffic.enter(r.h.in_at == 0 && name.size() <= link::kMostNameBytes ? name : std::string(),
                  r.h.ask.enter.argument);
    return true;
  }
  Answer answer = carry_out(ops, peer, r);
  return send_answer(peer, r.h, answer);
}

}  // namespace

void serve_program(Ops& ops, Traffic& traffic, Peer& program, void (*finalize)(Ops&), void (*ended)(pid_t)) {
  for (;;) {
    Incoming r;
    if (!read_request(program, r)) wait_for_the_end();
    if (r.h.kind == link::Kind::Finalize) {
      finalize(ops);
      Answer done;
      send_answer(program, r.h, done);
      ended(program.pid);
    }
    if (link::program_only(r.h.kind) || r.h.kind == link::Kind::Call || r.h.kind == link::Kind::Resume) {
      // A kind of the driven mode alone: no program of this mode sends it.
      traffic.unplanned();
      Answer no = refusal(link::Status::BadArgument, "this side drives no calls");
      if (!send_answer(program, r.h, no)) wait_for_the_end();
      continue;
    }
    if (!serve_one(ops, traffic, program, r)) wait_for_the_end();
  }
}

void serve_driven(Ops& ops, Traffic& traffic, Peer& harness, Peer& student, void (*finalize)(Ops&),
                  void (*ended)(pid_t)) {
  // The student's process is waiting for a call (its Serve not yet answered),
  // and the harness waits for a call's outcome (its Call not yet answered).
  // During an upcall the student's process waits for its Upcall's answer,
  // which the harness's Resume brings.
  // A Call that came before the student's process's first Serve is held
  // until that Serve comes (the process starts beside the harness, not first).
  Incoming serving, calling, upcalling, held;
  std::string calling_name;
  bool calling_marked = false;  // a student call, which the account marks (link.py, Call's `marked`)
  bool calling_reads = true;     // its memory read at its return (link.py, Call's `reads_memory`)
  bool student_waits = false, harness_waits = false, upcall_waits = false, student_gone = false, call_held = false;
  // Hands the harness's Call to the student's process, waiting in its Serve.
  auto start_call = [&](Incoming&& r) {
    const auto name_bytes = static_cast<std::size_t>(r.h.ask.call.name_bytes);
    calling_name.assign(r.in.data(), name_bytes);
    calling_marked = r.h.ask.call.marked != 0;
    calling_reads = r.h.ask.call.reads_memory != 0;
    if (calling_marked) traffic.enter(calling_name, r.h.ask.call.argument);
    Answer call;
    call.data = r.in;
    call.reply.answer.serve.name_bytes = static_cast<std::int64_t>(name_bytes);
    call.reply.answer.serve.reads_memory = calling_reads ? 1 : 0;
    student_waits = false;
    harness_waits = true;
    calling = std::move(r);
    if (!send_answer(student, serving.h, call)) student_gone = true;
  };
  for (;;) {
    if (student_gone) ops.page_student_gone();
    if (student_gone && call_held) {  // the held Call: the process is gone before it
      call_held = false;
      tell_gone(ops, harness, held.h);
    }
    pollfd fds[2] = {{harness.fd, POLLIN, 0}, {student_gone ? -1 : student.fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      wait_for_the_end();
    }
    if (fds[1].revents != 0) {
      Incoming r;
      const bool read = read_request(student, r);
      if (read && (r.resend || r.outside || !r.room) && link::answered(r.h.kind)) {
        Answer again = carry_out(ops, student, r);  // sent again inline, or refused: carried out by nothing
        if (!send_answer(student, r.h, again)) student_gone = true;
      } else if (!read) {
        student_gone = true;
        if (harness_waits || upcall_waits) {  // the call ended with its process: the harness learns how from the findings
          int status = 0;
          while (waitpid(student.pid, &status, 0) < 0 && errno == EINTR) {
          }
          ops.found_ended(WIFSIGNALED(status), WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
        if (harness_waits) {  // else its Resume hears it
          harness_waits = false;
          tell_gone(ops, harness, calling.h);
        }
      } else if (link::harness_only(r.h.kind) || (!harness_waits && r.h.kind != link::Kind::Serve &&
                                                  r.h.kind != link::Kind::Hello && r.h.kind != link::Kind::Free &&
                                                  r.h.kind != link::Kind::Finalize)) {
        // The harness's kind, or a request outside every call: no honest
        // program sends it, so it fails the case, and carries nothing. The
        // refusal is its status alone: a raw sender that reads no more than
        // a reply keeps its link in step, and fails by its account, not a hang.
        traffic.unplanned();
        if (link::answered(r.h.kind)) {
          Answer no;
          no.reply.status = link::Status::BadArgument;
          if (!send_answer(student, r.h, no)) student_gone = true;
        }
      } else if (r.h.kind == link::Kind::Upcall && r.in.size() > static_cast<std::size_t>(link::kMostUpcallBytes)) {
        // Larger than the harness, which would hold it, can take: refused to the caller alone.
        Answer no = refusal(link::Status::BadArgument,
                            "an upcall of " + std::to_string(r.in.size()) + " bytes: the kit takes at most " +
                                std::to_string(link::kMostUpcallBytes) + " bytes of arguments");
        if (!send_answer(student, r.h, no)) student_gone = true;
      } else if (r.h.kind == link::Kind::Upcall) {  // within a call: the harness runs it, and Resumes
        Answer up;
        up.reply.answer.call.outcome = static_cast<std::int64_t>(link::Outcome::Upcall);
        with_findings(ops, up, std::move(r.in));
        harness_waits = false;
        upcall_waits = true;
        upcalling = std::move(r);
        if (!send_answer(harness, calling.h, up)) wait_for_the_end();
      } else if (r.h.kind == link::Kind::Serve) {
        if (harness_waits) {  // the call's outcome, as the student's process returned it
          if (calling_marked) traffic.returned(calling_name, calling_reads);
          ops.call_returns();
          if (const int strays = end_strays(harness.pid, student.pid); strays > 0) ops.found_strays(strays);
          Answer outcome;
          outcome.reply.answer.call.outcome = r.h.ask.serve.outcome;
          with_findings(ops, outcome, std::move(r.in));
          harness_waits = false;
          if (!send_answer(harness, calling.h, outcome)) wait_for_the_end();
        }
        ops.page_filter(r.h.ask.serve.filter);
        serving = std::move(r);
        student_waits = true;
        if (call_held) {
          call_held = false;
          start_call(std::move(held));
        }
      } else if (r.h.kind == link::Kind::Finalize) {
        Answer done;  // its MPI is the side's: only the harness's Finalize ends it
        if (!send_answer(student, r.h, done)) student_gone = true;
      } else {
        ops.check_calls_of(harness_waits ? &calling_name : nullptr);  // compared with the other ranks' (Ops::agree)
        ops.student_asks(true);
        const bool served = serve_one(ops, traffic, student, r);
        ops.student_asks(false);
        ops.check_calls_of(nullptr);
        student_gone = !served;
      }
    }
    if (fds[0].revents == 0) continue;
    Incoming r;
    if (!read_request(harness, r)) wait_for_the_end();
    if ((r.resend || r.outside || !r.room) && link::answered(r.h.kind)) {
      Answer again = carry_out(ops, harness, r);
      if (!send_answer(harness, r.h, again)) wait_for_the_end();
    } else if (link::program_only(r.h.kind)) {
      Answer no = refusal(link::Status::BadArgument, "a request of the student's process, from the harness");
      if (!send_answer(harness, r.h, no)) wait_for_the_end();
    } else if (r.h.kind == link::Kind::Resume) {
      if (!upcall_waits) {
        Answer no = refusal(link::Status::BadArgument, "a Resume with no upcall waiting for it");
        if (!send_answer(harness, r.h, no)) wait_for_the_end();
        continue;
      }
      upcall_waits = false;
      if (student_gone) {  // it ended while the harness ran its upcall
        tell_gone(ops, harness, r.h);
        continue;
      }
      Answer back;
      back.data = std::move(r.in);
      harness_waits = true;
      calling = std::move(r);
      if (!send_answer(student, upcalling.h, back)) student_gone = true;
    } else if (r.h.kind == link::Kind::Call) {
      const auto name_bytes = static_cast<std::size_t>(r.h.ask.call.name_bytes);
      if (name_bytes == 0 || name_bytes > link::kMostNameBytes || name_bytes > r.in.size() || harness_waits ||
          upcall_waits) {
        Answer no = refusal(link::Status::BadArgument, "a call without a function's name, or within another");
        if (!send_answer(harness, r.h, no)) wait_for_the_end();
        continue;
      }
      if (student_gone) {
        tell_gone(ops, harness, r.h);
        continue;
      }
      if (!student_waits) {  // before its first Serve: the call waits for it
        held = std::move(r);
        call_held = true;
        continue;
      }
      start_call(std::move(r));
    } else if (r.h.kind == link::Kind::Finalize) {
      finalize(ops);
      if (student_waits && !student_gone) {
        Answer end;  // no call: the student's process ends
        send_answer(student, serving.h, end);
      } else if (!student_gone) {
        ::kill(student.pid, SIGKILL);  // not yet serving (the harness ended first): nothing of it to wait for
      }
      Answer done;
      send_answer(harness, r.h, done);
      // The job ends when the student's process has: its time after the last
      // case (a static destructor's, say) is the handin's, as a test program's is.
      for (int status = 0; !student_gone && waitpid(student.pid, &status, 0) < 0 && errno == EINTR;) {
      }
      ended(harness.pid);
    } else if (!serve_one(ops, traffic, harness, r)) {
      wait_for_the_end();
    }
  }
}

}  // namespace dtrain::side
