"""Staff-only tools, never shipped to students or to the autograder bundles:
run from the kit's top as python3 -m staff.NAME.

  bench         `make bench`: speed figures and their targets
  dist          `make handout`, `make autograder`: the distributions
  hidden_data   `make hidden-data`: records the hidden cases' expected values
  mutants       CTest's `mutants`: known bugs that must lose exactly their parts
  check_readme  CI: runs every command of README.md
  add_part      CI: follows the README's "Add a part" recipe in a scratch copy
"""
