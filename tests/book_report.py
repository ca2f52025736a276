"""pytest plugin (loaded with ``-p book_report``): the chapters' execution times, after the test summary.

The book-build tests record each chapter's execution time as the user property ``chapter_execution_s``
(the build runs on an xdist worker; user properties travel back to the controller with the reports).
"""

EXECUTION_PROPERTY = "chapter_execution_s"


def pytest_terminal_summary(terminalreporter):
    times = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                if name == EXECUTION_PROPERTY:
                    chapter, seconds = value
                    times[chapter] = seconds
    if not times:
        return
    terminalreporter.write_sep("-", "chapter execution times (the book build's one run of each chapter)")
    width = max(len(chapter) for chapter in times)
    for chapter in sorted(times):
        seconds = times[chapter]
        shown = "failed" if seconds is None else f"{seconds:7.1f} s"
        terminalreporter.write_line(f"{chapter:<{width}}  {shown}")
    total = sum(seconds for seconds in times.values() if seconds is not None)
    terminalreporter.write_line(f"{'total':<{width}}  {total:7.1f} s")
