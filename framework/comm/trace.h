// trace.h: the ledger's entries as one Chrome Trace Event file for all ranks
// (open it in ui.perfetto.dev or chrome://tracing; `python3 -m kit trace`
// draws it as a PNG). One pid per rank; a "X" span per collective, with its
// operation, bytes, elements, reduction, communicator, its member ranks
// (args.ranks: one call's spans on its ranks match by ranks and seq) and
// student function in args, and spans for the phases of training (forward,
// backward, optimizer). A call the agreement check refused carries
// args.mismatch (its message); a call still waiting when the watchdog stopped
// the case carries args.pending. A point-to-point call is a span of category
// "p2p" (args.dest, args.source and their tags, by rank in MPI's world), and
// each message a pair of flow events, "s" at its send and "f" at its recv,
// sharing an id: a viewer draws the arrow. A request (iallreduce) is a span
// of category "request" on its rank's second track (tid 1), from its start
// to the moment the kit saw it complete (args.request, args.completed_by:
// "wait", "test" or "progress"); the time a rank was blocked in its wait()
// is a span of category "wait" on the rank's own track.
//
// Times are microseconds on one clock: every rank of a host reads the host's
// steady clock, and each other host's offset from rank 0's host is measured
// when the trace starts; otherData.clock states the offsets and their
// uncertainty.
#pragma once

#include <cstdint>
#include <string>

#include "comm.h"

namespace dtrain {

// Keeps the ledger's entries from now on (ledger::set_tracing) and measures
// this host's clock against rank 0's. Collective over `comm`, whose rank 0 is
// rank 0 of every trace written later.
void start_trace(Communicator& comm);

// Collective over `comm`: every rank hands over the entries its ledger kept
// and the bytes its communicators counted; rank 0 writes the merged file.
// Returns false on rank 0 if the file can't be written.
bool write_trace(Communicator& comm, const std::string& path, std::uint64_t bytes_counted);
// The same merge, as text on rank 0 ("" on the others), written nowhere: for
// a check that runs where no file may be opened (the test binary's filter).
std::string trace_text(Communicator& comm, std::uint64_t bytes_counted);

// This rank's part alone, with no other rank taking part: its entries so far
// and the call it is in now, open until now. For a case the watchdog ends;
// `python3 -m kit trace` merges the parts of the ranks (PATH.rank<N>.json).
// Safe from another thread than the one making the calls.
bool write_trace_part(const std::string& path, int rank);

}  // namespace dtrain
