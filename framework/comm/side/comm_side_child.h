// comm_side_child.h: how a rank's MPI side starts the rank's program, its
// child (comm_side_main.cpp), and what it reads of the launcher's words first.
#pragma once

#include <sys/types.h>

#include <string>

namespace dtrain::side {

// The rank as the launcher announced it, before MPI starts (each MPI names it differently); "-1" if none did.
std::string launcher_rank();

// In the forked child: dies with the side, keeps only the link's two ends
// and, for the driven mode's harness, the side's page (side_page.h; -1:
// none) (every other descriptor closes at exec; control_end -1: none), loses MPI's variables, learns its
// link and rank from the environment, and becomes the program argv names.
[[noreturn]] void start_child(char** argv, int link_end, int control_end, pid_t parent, int page = -1);

// The driven mode (comm_side_strays.cpp): ends the processes the student's
// process started and left running, and the orphans that came to this side
// (their subreaper), but the two programs; returns how many there were.
int end_strays(pid_t harness, pid_t student);

// The runner's directory for the job's channels, from the test program's
// arguments; "" for a program the runner did not start (a trainer).
std::string results_dir(char** program_argv);

}  // namespace dtrain::side
