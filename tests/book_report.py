"""pytest plugin (loaded with ``-p book_report``): the chapters' execution times, after the test summary.

The book-build tests record each chapter's execution time as the user property ``chapter_execution_s``, and
the whole build's wall time and number of reading processes as ``book_build_s`` (the build runs on an xdist
worker; user properties travel back to the controller with the reports). The chapters execute in parallel
(``_ext/parallel_read.py``), so the build's wall time is below the sum of the chapters' times.
"""

EXECUTION_PROPERTY = "chapter_execution_s"
BUILD_PROPERTY = "book_build_s"


def pytest_terminal_summary(terminalreporter):
    times, build = {}, None
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                if name == EXECUTION_PROPERTY:
                    chapter, seconds = value
                    times[chapter] = seconds
                elif name == BUILD_PROPERTY:
                    build = value
    if not times:
        return
    terminalreporter.write_sep("-", "chapter execution times (the book build's one run of each chapter)")
    terminalreporter.write_line("(two chapters run at a time, beside the other test worker: each shares the cores)")
    width = max(len(chapter) for chapter in times)
    for chapter in sorted(times):
        seconds = times[chapter]
        shown = "failed" if seconds is None else f"{seconds:7.1f} s"
        terminalreporter.write_line(f"{chapter:<{width}}  {shown}")
    total = sum(seconds for seconds in times.values() if seconds is not None)
    terminalreporter.write_line(f"{'total':<{width}}  {total:7.1f} s")
    if build is not None:
        seconds, processes = build
        terminalreporter.write_line(f"the whole book build took {seconds:.1f} s of wall time, reading (and executing) "
                                    f"in {processes} process{'es' if processes > 1 else ''}")
