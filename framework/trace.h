// trace.h: the ledger's entries as one Chrome Trace Event file for all ranks
// (open it in ui.perfetto.dev or chrome://tracing; `python3 -m kit trace`
// draws it as a PNG). One pid per rank; a "X" span per collective, with its
// operation, bytes, communicator and student function in args, and spans for
// the phases of training (forward, backward, optimizer).
#pragma once

#include <cstdint>
#include <string>

#include "comm.h"

namespace dtrain {

// Collective over `comm`: every rank hands over the entries its ledger kept
// (ledger::set_tracing) and the bytes its communicators counted; rank 0
// writes the merged file. Returns false on rank 0 if the file can't be written.
bool write_trace(Communicator& comm, const std::string& path, std::uint64_t bytes_counted);

}  // namespace dtrain
