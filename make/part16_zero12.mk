# Part 16's make targets and settings: the Makefile includes this file where
# the copy holds part16_zero12 (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
# Part 16 adds no target of its own: `make test-part16` runs its cases, and
# `make explore`'s ZeRO panel puts stages 1, 2 and 3 side by side.
