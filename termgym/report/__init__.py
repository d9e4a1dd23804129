"""Reports of a run: terminal tables, a self-contained HTML file, Prometheus text, the gate."""

from __future__ import annotations

from termgym.report._compare import Check, compare_runs, parse_fraction
from termgym.report._html import render_html, write_html
from termgym.report._load import RunData, load_run, merge_runs
from termgym.report._prometheus import prometheus_text, write_prometheus
from termgym.report._provenance import gate_notes
from termgym.report._relearning import relearning_svg
from termgym.report._tables import print_report

__all__ = [
    "Check",
    "RunData",
    "compare_runs",
    "gate_notes",
    "load_run",
    "merge_runs",
    "parse_fraction",
    "print_report",
    "prometheus_text",
    "render_html",
    "write_html",
    "write_prometheus",
    "relearning_svg",
]
