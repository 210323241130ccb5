"""The marking rules: what a newly stored observation makes of the older, current observations of
its project, without a model. Each rule is narrow on purpose (a wrong mark hides a true memory
from every push), and its precision is measured (bench/updates.py, docs/memory-updates.md):

  repeat    the same claim again (identical content, or the same words and numbers): the older
            copy folds under the newest, which then says how often and since when it was seen
  resolved  a check that failed later passed (the same command key), or a failure a model
            reported was fixed (a bugfix naming the same files and subject)
  rerun     a later run of the same command gave another result: the latest result is what is true
  changed   a newer change, fix, refactor or decision on the same subject and the same files
            states a different value for the same thing: its headline says something changed, a
            value of the older headline has another value now, or its record says a thing the
            older headline named changed; only its best match is marked
  restated  a stated decision that says it replaces an older one on its subject (marks/rivals.py)
  rival     a stated decision claiming something else on an older one's subject, neither replacing
            the other: the two are marked as conflicting, both stay current (marks/rivals.py)
"""

from __future__ import annotations

from dataclasses import dataclass

from claude_mem.file_paths import same_file
from claude_mem.marks import rivals
from claude_mem.marks.claims import Claim, keyed_values

CHANGE_TYPES = ("change", "bugfix", "refactor", "decision")  # what can supersede a claim (not a new feature, not a finding)
REPEAT_OVERLAP = 0.8  # share of the words of title and facts two copies of one claim have in common
RULES = ("repeat", "resolved", "rerun", "changed", "restated", "rival")


@dataclass(frozen=True)
class Mark:
    old_id: int
    new_id: int
    relation: str  # supersedes | duplicates | conflicts
    rule: str
    reason: str


def marks_for(new: Claim, older: list[Claim], *, supersedes_already: bool = False) -> list[Mark]:
    """The marks storing `new` makes on `older` (its project's current observations recorded before
    it), at most one per older observation. `supersedes_already`: `new` already supersedes something
    (the model said so), so the `changed` rule, which marks one best match, has nothing to add."""
    marks: dict[int, Mark] = {}
    for old in older:
        if old.id == new.id or old.project != new.project:
            continue
        mark = _repeat(new, old) or _check(new, old) or _fixed(new, old)
        if mark is not None:
            marks[old.id] = mark
    others = [o for o in older if o.id not in marks and o.project == new.project]
    for old_id, relation, rule, reason in rivals.marks_on(new, others, supersedes_already=supersedes_already):
        marks[old_id] = Mark(old_id, new.id, relation, rule, reason)
    if not supersedes_already and not any(m.relation == "supersedes" for m in marks.values()):
        best = _changed(new, [o for o in older if o.id not in marks and o.id != new.id and o.project == new.project])
        if best is not None:
            marks[best.old_id] = best
    return list(marks.values())


def _repeat(new: Claim, old: Claim) -> Mark | None:
    if new.type != old.type:
        return None
    same = bool(new.content_hash) and new.content_hash == old.content_hash
    if not same:
        union = new.claim_words | old.claim_words
        same = bool(union) and len(new.claim_words & old.claim_words) / len(union) >= REPEAT_OVERLAP \
            and new.numbers == old.numbers
    return Mark(old.id, new.id, "duplicates", "repeat", "the same claim recorded again") if same else None


def _check(new: Claim, old: Claim) -> Mark | None:
    """Heuristic observations of commands: a failure later passed, or a later result of one check."""
    if not old.checks or not new.checks:
        return None
    passed = {c.key for c in new.checks if c.ok}
    failed = {c.key for c in old.checks if not c.ok}
    if failed and all(not c.ok for c in old.checks) and failed <= passed:
        keys = ", ".join(f"`{k}`" for k in sorted(failed))
        return Mark(old.id, new.id, "supersedes", "resolved", f"{keys} failed, then passed")
    command = old.check_command()
    if command is None or new.check_command() != command:
        return None
    if (old.checks[-1].ok, old.checks[-1].result) == (new.checks[-1].ok, new.checks[-1].result):
        return Mark(old.id, new.id, "duplicates", "repeat", f"`{command}` again, with the same result"[:120])
    return Mark(old.id, new.id, "supersedes", "rerun", f"a later run of `{command}`: {new.checks[-1].result}"[:120])


def _model_written(claim: Claim) -> bool:
    # The heuristic synthesizer's concepts name the kind of record, not its subject; its own
    # observations are compared through the commands they ran (_check).
    return claim.source != "heuristic"


def _shares_file(new: Claim, old: Claim) -> bool:
    return any(same_file(a, b) for a in new.files for b in old.files)


def _fixed(new: Claim, old: Claim) -> Mark | None:
    """A model reported a failure; a later bugfix on the same files and subject fixed it."""
    if not (_model_written(new) and _model_written(old) and old.reports_failure and new.reports_fix):
        return None
    if not _shares_file(new, old) or not (new.concepts & old.concepts or new.title_words & old.title_words):
        return None
    return Mark(old.id, new.id, "supersedes", "resolved", f"fixed: {new.title}"[:120])


def _changed(new: Claim, older: list[Claim]) -> Mark | None:
    """The best of the older claims that `new` states another value for (see the module doc)."""
    if new.type not in CHANGE_TYPES or not _model_written(new):
        return None
    new_values = keyed_values(new.head)
    best: tuple[tuple[int, int, int], Claim] | None = None
    for old in older:
        if not _model_written(old) or not _shares_file(new, old):
            continue
        concepts = new.concepts & old.concepts
        subject = old.title_words & new.head_words
        if not concepts or not subject:
            continue
        old_values = keyed_values(old.title)
        other_value = any(k in new_values and not (v & new_values[k]) for k, v in old_values.items())
        # Its record says a thing the older headline named (and its own does not) changed.
        says_changed = bool((old.title_words - new.title_words) & new.changed)
        if not (new.changes or other_value or says_changed):
            continue
        files = sum(1 for a in old.files if any(same_file(a, b) for b in new.files))
        score = (len(concepts) + files + len(subject), old.created, old.id)
        if best is None or score > best[0]:
            best = (score, old)
    if best is None:
        return None
    return Mark(best[1].id, new.id, "supersedes", "changed", f"changed: {new.title}"[:120])
