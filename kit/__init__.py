"""The kit's runtime in Python (standard library only, so it runs unchanged
on Autolab and Gradescope images): the parts table, building student files,
running cases and judging their records, the static checks, and the
student commands. `python3 -m kit --help` lists the commands; the Makefile
calls them.

  parts          the table of parts, files, rank counts and time limits
  part_types     what a row of the table is: a part, its runs, the files it adds (found by its key)
  build_lists    what CMake and the Makefile read of the table
  course         the course file (course.toml): its choices, checked, with the environment's overrides
  course_cli     `python3 -m kit course`: the course as it takes effect, checked and printed
  course_schema  the course file's schema: every key, declared once
  calibration    the limits a handin can exceed, calibrated on the machine that grades
  measured       running a command measured: its CPU time, a wall and a stall limit
  toml_subset    the course file's reader (the part of TOML it needs, on any Python 3.8+)
  paths          the kit's directory and the build directory
  overrides      the environment's one-command overrides, read once (docs/course-staff.md lists them)
  records        the results file's format (defined in tests/harness/records.h)
  jobs           which jobs run a part's cases, and when (a hung part's last)
  launch         one MPI job of the test binary, started, watched and stopped
  outcomes       a job's records as one outcome per case, bounded summaries
  diagnosis      the roll-call of a hung case: what each rank was doing, what it waits for
  judge          a case decided from the values student functions returned
  safe_read      reading what a sandboxed job wrote: no links, no FIFOs, bounded
  findings_cache the checks' findings, kept by content
  processes      finding and ending processes
  build          compiling student files against a build, linking the tests
  recipe         how a build compiles a student file (its flags, read from the build)
  object_cache   compiled student objects, kept by content
  static_checks  the rules a student file's text is checked against first (a friendly early word)
  link_check     what a compiled student file may reference, define and keep (the rule that refuses)
  elf            reading compiled objects: sections, symbols, archives, lines, instructions
  link_allowlist the link check's allowlist (its files) and the demangled names it matches
  suite          `make test`, `make test-partN`
  handin         `make handin`
  explore        `make explore`
  trace          `make trace`: a trace file as a PNG timeline
  trace_file     a trace file read: its spans, calls and whether they overlap
  timeline       a trace drawn with gnuplot
  check_handout  the handout agrees with the headers, the Makefile and the table
  handout_text   what the handout says of parts and points, made from the table and the course;
                 each graded part's texts in the template's slots
  report         formatting shared by the runner and the grader
"""
