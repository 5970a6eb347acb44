"""`coursekit i18n migrate`: whole-cell catalogues into per-unit ones, every translation kept.

Before units (`blocks`), a catalogue held one entry per markdown cell. `migrate_catalogue` cuts each such entry's
English and its translation into units and pairs them one to one where the two agree: as many units, the same
kind at each place (a heading with a heading, a list item with a list item, a table with a table), a fence with a
fence of the same info string, and the translated units joined by the English cell's separators giving the
translation back byte for byte (so the build writes the same edition). A cell whose units do not agree keeps its
whole-cell entry, which the build uses while the cell is unchanged, and is reported, so a translator can split it
by hand. Fuzzy and obsolete entries are kept as they are.
"""

from dataclasses import dataclass, field
from pathlib import Path

import polib

from coursekit.files import write_text_atomically
from coursekit.i18n.blocks import split_blocks
from coursekit.i18n.catalogues import FORMAT_HEADER, UNITS_FORMAT, read_catalogue, read_entries


@dataclass
class Migration:
    """What `migrate_catalogue` did: cells split into units, cells kept whole (a line each, with the reason)."""

    split: int = 0
    kept_whole: list = field(default_factory=list)
    changed: list = field(default_factory=list)  # the files rewritten


def pair_units(english, translation):
    """The translated units of `translation` paired with the units of `english`, or a reason they do not pair."""
    source, target = split_blocks(english), split_blocks(translation)
    if len(source.blocks) != len(target.blocks):
        return None, f"{len(source.blocks)} English units, {len(target.blocks)} translated"
    for index, (left, right) in enumerate(zip(source.blocks, target.blocks), 1):
        if left.kind != right.kind or (left.kind == "fence" and left.info != right.info):
            return None, f"unit {index} is a {left.kind} in English, a {right.kind} in the translation"
    pairs = dict(zip(source.texts, target.texts))
    if len(pairs) != len(set(zip(source.texts, target.texts))):
        return None, "a unit repeated in the English is translated two ways"
    if source.join(target.texts) != translation:
        return None, "the translation's blank lines between units differ from the English's"
    return target.texts, ""


def migrate_catalogue(path, report):
    """Rewrites the catalogue at `path` with one entry per unit where its whole-cell entries pair (`pair_units`),
    and marks it as a catalogue of units (its `X-Coursekit-Format` header, which `update` asks for). Reads and
    checks the whole file first (`read_entries`): a malformed one raises before anything is written."""
    path = Path(path)
    read_entries(path)
    catalogue = read_catalogue(path)
    before = str(catalogue)
    migrated = []
    for entry in catalogue:
        units = split_blocks(entry.msgid).blocks
        if entry.obsolete or len(units) < 2:
            migrated.append(entry)
            continue
        if not entry.msgstr or "fuzzy" in entry.flags:
            reason = "fuzzy" if entry.msgstr else ""
            pieces = None
        else:
            pieces, reason = pair_units(entry.msgid, entry.msgstr)
        if pieces is None:
            migrated.append(entry)
            if reason:
                report.kept_whole.append(f"{path}:{entry.linenum}: cell {entry.msgctxt} kept whole ({reason})")
            continue
        report.split += 1
        seen = set()
        for block, translated in zip(units, pieces):
            if block.text not in seen:  # a unit repeated in one cell is one entry (gettext's key)
                seen.add(block.text)
                migrated.append(polib.POEntry(msgctxt=entry.msgctxt, msgid=block.text, msgstr=translated,
                                              comment=block.kind))
    catalogue[:] = migrated
    catalogue.metadata[FORMAT_HEADER] = UNITS_FORMAT
    if str(catalogue) != before:
        write_text_atomically(path, str(catalogue))
        report.changed.append(path)
    return report
