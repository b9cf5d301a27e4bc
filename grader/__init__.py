"""The autograder: `grader/grade` is the command; grading.py grades one
handin in named steps, sandbox.py says where and as whom student code runs,
reports.py writes a grade in its four forms, batches.py grades a folder of
handins, and cli.py reads the command line. Standard library only."""
