"""The autograder: `grader/grade` is the command; grading.py grades one
handin in named steps, sandbox.py says where and as whom student code runs,
and cli.py handles single and batch grading. Standard library only."""
