"""Sphinx extension: author-year citations in round brackets, with matching bibliography labels.

sphinxcontrib-bibtex's ``author_year`` reference style writes citations as "Kunin et al. [2025]"
and "[Kunin et al., 2025]", and the labels in the bibliography come from the pybtex style, which
are alphanumeric ("KMC+25") by default. This registers two plugins:

- the reference style ``author_year_round``: ``author_year`` with round brackets,
  "Kunin et al. (2025)" for {cite:t} and "(Kunin et al., 2025)" for {cite:p};
- the bibliography style ``authoryear``: entries sorted by author, year and title and labelled
  "Saxe et al., 2014" or "Pesme and Flammarion, 2023", with a, b, ... appended to the year when
  two labels coincide.
"""

from collections import Counter
from dataclasses import dataclass, field

import pybtex.plugin
import sphinxcontrib.bibtex.plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round_brackets():
    return BracketStyle(left="(", right=")")


@dataclass
class RoundAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    bracket_textual: BracketStyle = field(default_factory=_round_brackets)
    bracket_parenthetical: BracketStyle = field(default_factory=_round_brackets)
    bracket_author: BracketStyle = field(default_factory=_round_brackets)
    bracket_label: BracketStyle = field(default_factory=_round_brackets)
    bracket_year: BracketStyle = field(default_factory=_round_brackets)


def _last_name(person):
    return " ".join(person.last_names).replace("{", "").replace("}", "")


def _author_year(entry):
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(person) for person in persons]
    if not names:
        who = entry.fields.get("title", entry.key)
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return who, entry.fields.get("year", "n.d.")


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        keys = [_author_year(entry) for entry in sorted_entries]
        counts = Counter(keys)
        seen = Counter()
        for key in keys:
            who, year = key
            suffix = ""
            if counts[key] > 1:
                suffix = "abcdefghijklmnopqrstuvwxyz"[seen[key]]
                seen[key] += 1
            yield f"{who}, {year}{suffix}"


class AuthorYearStyle(UnsrtStyle):
    default_label_style = AuthorYearLabelStyle
    default_sorting_style = "author_year_title"


def setup(app):
    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearReferenceStyle
    )
    pybtex.plugin.register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
