// records.h: the format of the results file, the one channel from the test
// binary (the harness's case_listener.cpp, watchdog.cpp and abort_records.cpp
// write) to the runner (kit/records.py reads).
//
// One JSON object per line. Each record is written with one write() to a file
// opened with O_APPEND, so records of different ranks never share a line.
// "event" names the kind:
//
//   plan          rank 0, sealed, once per job before the first case
//                 {"event":"plan","ranks":N,"cases":["Suite.Case", ...],"syscall_filter":F}
//                 F is "on", or "off: " and why (platform.h, restrict_system_calls)
//   result        rank 0, sealed, after every case all its ranks finished
//                 {"event":"result","case":C,"status":"pass"|"fail","seconds":S,
//                  "failures":[{"rank":R,"message":M}, ...]}
//   rank_failure  any rank, the moment one of its checks fails
//                 {"event":"rank_failure","case":C,"rank":R,"message":M}
//   abort         any rank, when a case can't finish by a crash or exit();
//                 written from a signal handler, so its text is fixed before
//                 the case starts (abort_prefix) and closed with kAbortSuffix.
//                 {"event":"abort","case":C,"rank":R,"why":W}
//   rollcall      every rank of a case its watchdog stops (a hang): what the
//                 rank was doing, from its collective ledger, and how long the
//                 case had run. No rank ends the job before all have answered.
//                 {"event":"rollcall","case":C,"rank":R,"state":S,"seconds":T}
//
// Sealed records end with ,"mac":"<64 hex digits>"} (results_seal.h); only
// they can make a case pass. The others can only fail one, so they need none.
// tests/test_records.cpp writes one record of every kind, and
// staff/tests/test_records.py reads them back with kit/records.py.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace records {

// A JSON string literal (quotes included) for any bytes of text.
std::string json_string(const std::string& text);

std::string plan(int ranks, const std::vector<std::string>& cases, const std::string& syscall_filter = "on");
std::string result(const std::string& name, bool passed, double seconds,
                   const std::vector<std::pair<int, std::string>>& failures);  // (rank, message)
std::string rank_failure(const std::string& name, int rank, const std::string& message);
std::string rollcall(const std::string& name, int rank, const std::string& state, double seconds);
// What every rollcall record of case `name` starts with, up to its rank.
std::string rollcall_prefix(const std::string& name);
// The rank of a rollcall record of case `name`, read from one line of the
// results file; -1 if the line is another record, or not a whole one (a
// record's kind is its start: a message that holds the text is no answer).
int rollcall_rank(const std::string& line, const std::string& name);

// An abort record is abort_prefix(...) + why + kAbortSuffix, where `why` is
// text without quotes, backslashes or control characters.
std::string abort_prefix(const std::string& name, int rank);
inline constexpr const char* kAbortSuffix = "\"}\n";

}  // namespace records
