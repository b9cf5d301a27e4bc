"""The kit's commands: python3 -m kit COMMAND [ARGS], run from the kit's top.

  test           run parts' public cases and print the points (make test, make test-partN)
  handin         check the student files and write handin.tar (make handin)
  explore        train under every strategy, table and chart (make explore)
  static-check   print the static findings of the files named
  link-check     print the link check's refusals of the objects named
  trace          draw a trace file as a PNG timeline (make trace)
  check-handout  check the handout against the headers, the Makefile and the table
  parts          print the parts table
  course         check the course file (course.toml) and print the course as it takes effect
  ring           time the allreduces of Part 11, an extension part (make mpi-demo CASE=ring)
"""
import importlib
import sys

COMMANDS = {"test": "kit.suite", "handin": "kit.handin", "explore": "kit.explore",
            "static-check": "kit.static_checks", "link-check": "kit.link_check",
            "check-handout": "kit.check_handout", "parts": "kit.parts", "course": "kit.course_cli", "trace": "kit.trace",
            "ring": "kit.ring"}


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        module = importlib.import_module(COMMANDS[argv[0]])
    except ModuleNotFoundError as e:  # an extension part's command, in a copy that does not hold the part
        if e.name != COMMANDS[argv[0]]:
            raise
        print(f"python3 -m kit {argv[0]}: this copy of the kit does not hold the extension part of this command")
        return 2
    return module.main(argv[1:])


sys.exit(main(sys.argv[1:]))
