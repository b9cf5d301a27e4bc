// records.h: the format of the records, the one channel from the test binary
// (the harness's case_listener.cpp, watchdog.cpp, abort_records.cpp and
// observations.cpp write) to the runner (kit/launch.py reads the channels,
// kit/records.py the records).
//
// One JSON object per line. Each rank writes to a channel of its own, a FIFO
// the runner made and drains as records arrive (job.h): a record leaves the
// rank once, and the runner takes its rank from the channel, so a "rank"
// member that names another rank is malformed. Every record is evidence,
// never a verdict: the runner and, when grading, the judge (kit/judge.py)
// decide each case outside this process, so a record written by code under
// test can at most fail a case or offer a wrong value. "event" names the kind:
//
//   plan          rank 0 (on no other channel), once per job before the first case
//                 {"event":"plan","ranks":N,"cases":["Suite.Case", ...],"syscall_filter":F}
//                 F is a code of kit/records.py's FILTER_STATES ("on", "off_refused",
//                 ...; the grader words it), for the report; the judge never needs it.
//                 A second plan, or a code not on the list, is no record of the kit's
//   value         any rank: what a student function returned (framework/calls/observe.h),
//                 the first 2 calls of each label per case, numbered "label#n";
//                 at most 256 elements, every stride-th of a larger result
//                 {"event":"value","case":C,"rank":R,"label":L,"rows":N,"cols":M,
//                  "stride":S,"values":[...]}
//   result        rank 0 (on no other channel), after every case all its ranks finished: the ranks'
//                 shared verdict of their own checks (closed forms); a case
//                 with a recorded value passes only if the judge agrees, and
//                 a second result for a case fails it. The harness lists no
//                 failures here: each rank's messages are its own
//                 rank_failure records, so no text travels between ranks
//                 {"event":"result","case":C,"status":"pass"|"fail","seconds":S,
//                  "failures":[]}
//   rank_failure  any rank, the moment one of its checks fails
//                 {"event":"rank_failure","case":C,"rank":R,"message":M}
//   abort         any rank, when a case can't finish by a crash or exit();
//                 written from a signal handler, so its text is fixed before
//                 the case starts (abort_prefix) and closed with kAbortSuffix.
//                 {"event":"abort","case":C,"rank":R,"why":W}
//   rollcall      every rank of a case its watchdog stops (a hang): what the
//                 rank was doing, from its collective ledger, and how long the
//                 case had run. No rank ends the job before all have answered
//                 (each marks its answer on the roll-call board, job.h).
//                 {"event":"rollcall","case":C,"rank":R,"state":S,"seconds":T,"phase":P}
//                 S is for people. P is where the rank was in the case:
//                 "running" (its body), "finished" (its body done, waiting for
//                 the others) or "failed". A rank waiting in a call of the
//                 communicator also says which as data, a point-to-point one
//                 with its other ends (world ranks, -1 for none), which the
//                 runner reads for its diagnoses (a cycle of sends, a tag
//                 mismatch, a message nobody takes), and, driven, the call's
//                 number, its elements and its communicator's group, by which
//                 the runner tells a stall from a hang (kit/diagnosis.py):
//                 ...,"wait":{"op":"send","to":1,"send_tag":0,"from":-1,"recv_tag":-1,
//                             "seq":-1,"count":8,"group":1}}
//   traffic       the rank's MPI side (framework/comm/side/traffic.h), on a channel
//                 of its own that the child never holds, once per case the child
//                 named: what the side carried, as (operation, elements, the
//                 communicator's size) and how many times; "overflow" counts the
//                 calls past the record's 256 kinds
//                 {"event":"traffic","case":C,"rank":R,"calls":[["allgather",6,2,1], ...],
//                  "overflow":0}
//
// The members of each record, in order, are defined once, in kit/records.py
// (RECORDS); CMake writes the C++ writers from it (records_format.h,
// included below), and kit/records.py checks what it reads against the same
// definition. tests/test_records.cpp writes one record of every kind, and
// staff/tests/test_records.py reads them back with kit/records.py.
#pragma once

// The writers, one per record, generated from the one definition of the
// records' members (kit/records.py, RECORDS), which the runner reads by.
#include "records_format.h"
