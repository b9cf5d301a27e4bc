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
"""
import importlib
import sys

COMMANDS = {"test": "kit.suite", "handin": "kit.handin", "explore": "kit.explore",
            "static-check": "kit.static_checks", "link-check": "kit.link_check",
            "check-handout": "kit.check_handout", "parts": "kit.parts_cli", "course": "kit.course_cli", "trace": "kit.trace"}


def part_commands():
    """The commands the parts' rows register (kit/part_table.py, Adds.commands):
    name -> (module, what it does, whether this copy holds the part). Read
    only for a command that is not the kit's own: the table loads the
    course file, which `course` must check even when it is broken."""
    from kit import parts
    return {name: (module, what, not p.extension or p.key in parts.CONFIGURATION.held)
            for p in parts.ALL_PARTS for name, module, what in p.adds.commands}


def usage() -> str:
    try:
        extra = "".join(f"  {name:<14} {what}\n" for name, (_module, what, held) in part_commands().items() if held)
    except SystemExit:  # the course file is broken: `python3 -m kit course` says how
        extra = ""
    return __doc__.strip() + ("\n" + extra.rstrip() if extra else "")


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    module = COMMANDS.get(argv[0])
    if module is None:
        command = part_commands().get(argv[0])
        if command is None:
            print(usage())
            return 2
        module, _what, held = command
        if not held:
            print(f"python3 -m kit {argv[0]}: this copy of the kit does not hold the extension part of this command")
            return 2
    return importlib.import_module(module).main(argv[1:])


sys.exit(main(sys.argv[1:]))
