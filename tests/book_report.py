"""pytest plugin (loaded with ``-p book_report``): the chapters' execution times, after the test summary.

In ``python -m pytest`` nbval executes the chapters (one test per code cell, ``chapters/NN_slug.ipynb::Cell k``);
a chapter's time is the sum of its cells' setup, call and teardown durations (its kernel's start and stop
included), read from the test reports. Where the book build executes the chapters itself (nbval not in the
session: tests/test_book.py or tests/ alone), test_chapter_executes records each chapter's execution time
from the build log as the user property ``chapter_execution_s``. The book build's wall time, its number of
reading processes, the chapters it executed and the seconds it waited for nbval's runs come as
``book_build_s`` (the build runs on an xdist worker; user properties travel back with the reports).
"""

import re

EXECUTION_PROPERTY = "chapter_execution_s"
BUILD_PROPERTY = "book_build_s"
CHAPTER_CELL = re.compile(r"^chapters/(?P<stem>[^/]+)\.ipynb::Cell \d+$")


def pytest_terminal_summary(terminalreporter):
    nbval, built, build = {}, {}, None
    for reports in terminalreporter.stats.values():
        for report in reports:
            cell = CHAPTER_CELL.match(getattr(report, "nodeid", "") or "")
            if cell and hasattr(report, "duration"):
                nbval[cell["stem"]] = nbval.get(cell["stem"], 0.0) + report.duration
            for name, value in getattr(report, "user_properties", ()):
                if name == EXECUTION_PROPERTY:
                    chapter, seconds = value
                    built[chapter] = seconds
                elif name == BUILD_PROPERTY:
                    build = value
    if nbval:
        times = nbval
        terminalreporter.write_sep("-", "chapter execution times (nbval's run of each chapter, its kernel's start included)")
        terminalreporter.write_line("(one chapter at a time on each test worker, beside the other worker)")
    elif built:
        times = {chapter: seconds for chapter, seconds in built.items()}
        terminalreporter.write_sep("-", "chapter execution times (the book build's one run of each chapter)")
        terminalreporter.write_line("(two chapters run at a time, beside the other test worker: each shares the cores)")
    else:
        return
    width = max(len(chapter) for chapter in times)
    for chapter in sorted(times):
        seconds = times[chapter]
        shown = "failed" if seconds is None else f"{seconds:7.1f} s"
        terminalreporter.write_line(f"{chapter:<{width}}  {shown}")
    total = sum(seconds for seconds in times.values() if seconds is not None)
    terminalreporter.write_line(f"{'total':<{width}}  {total:7.1f} s")
    if build is not None:
        seconds, processes, executed, waited = (list(build) + [None, None])[:4]
        plural = "es" if processes > 1 else ""
        if executed == 0:
            what = f"reusing nbval's runs (no chapter executed again), reading in {processes} process{plural}"
        else:
            what = f"reading (and executing {executed if executed is not None else 'the'} chapters) in {processes} process{plural}"
        terminalreporter.write_line(f"the whole book build took {seconds:.1f} s of wall time, {what}")
        if waited:
            terminalreporter.write_line(f"(the book test first waited {waited:.1f} s for the chapters still running under nbval)")
