"""Each extension part's known bugs, in a module named by its key (staff/mutant_table.py loads them)."""
