"""Bundled grader kinds, registered through the "termgym.graders" entry-point group."""
