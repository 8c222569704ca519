"""Benchmarks.  Pure modules (stats, schedule, *_report) run in CPython too; the suites need the browser."""
