"""Build the student edition of the book: every exercise, no solution.

    python tools/build_student_edition.py                 # into _build/student/_build/html
    python tools/build_student_edition.py --path-output DIR [--no-execute] [jupyter-book options]

It builds with the book's own _config.yml, changed in three places: sphinx-exercise's
``hide_solutions`` is on (with _ext/student_edition.py, gated solutions with code cells go too), the
title says "student edition", and, with ``--no-execute``, no notebook is run (for a quick look at
the text; figures and glued numbers are then missing). The changed configuration is written next to
_config.yml for the build (its paths are relative to the book's folder) and removed afterwards.
Other options go to ``jupyter-book build``; the default ones are ``-W -n --keep-going --all``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STUDENT_CONFIG = ROOT / ".student_config.yml"


def student_config(execute=True):
    """The book's configuration (a dict) with solutions hidden."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] = f"{config['title']} (student edition)"
    config["sphinx"]["config"]["hide_solutions"] = True
    if not execute:
        config.setdefault("execute", {})["execute_notebooks"] = "off"
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path-output", default=str(ROOT / "_build" / "student"),
                        help="output folder (the HTML lands in PATH/_build/html)")
    parser.add_argument("--no-execute", action="store_true", help="do not run the notebooks")
    args, extra = parser.parse_known_args(argv)
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-book")
    if jupyter_book is None:
        sys.exit("jupyter-book is not installed (pip install -r requirements.txt)")
    STUDENT_CONFIG.write_text(yaml.safe_dump(student_config(execute=not args.no_execute), sort_keys=False))
    try:
        command = [jupyter_book, "build", str(ROOT), "--config", str(STUDENT_CONFIG),
                   "--path-output", args.path_output, *(extra or ["-W", "-n", "--keep-going", "--all"])]
        return subprocess.run(command, cwd=ROOT).returncode
    finally:
        STUDENT_CONFIG.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
