"""The analysis of runs: the metrics with their intervals, and the trace audit.

Above the recordings (`termgym.recording`): both read episodes back and neither runs one.
`termgym.report` turns their results into tables, HTML and the regression gate.
"""

from __future__ import annotations
