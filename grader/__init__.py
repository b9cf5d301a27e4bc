"""The autograder: `grader/grade` is the command; grading.py grades one
handin in named steps (staging.py and running.py hold them, grades.py the
grade they fill in), sandbox.py says where and as whom student code runs
(with slots.py, namespaces.py and leftovers.py),
reports.py writes a grade in its four forms, batches.py grades a folder of
handins into the files gradebook.py writes (stamps.py says which results
still stand), rescore.py scores them again
under a changed course, similarity.py lists the handins that share code,
and cli.py reads the command line. Standard library only."""
