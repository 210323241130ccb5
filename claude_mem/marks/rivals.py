"""Stated decisions on one subject (issue 51): a newer one that says it replaces an older one
supersedes it ("Decision update: ...", "instead", "no longer", "replacing", "... now ..."); one
that does not, yet claims something else on the same subject, rivals it: the pair is marked
`conflicts`, and every reader shows both with the conflict said, or neither (store/marks.py).

The same subject: both decisions, for related scopes (text/scope.py), sharing a name of a file or
an identifier (`services/audit/events.log`, `source_id`), or enough of their headlines' words
(at least RIVAL_WORDS, and RIVAL_SHARE of the shorter's; words alike in their first PREFIX
letters count as one: `reproducible`, `reproducibility`), their scope's own names left out (two
rules for one component are not rivals for that). A replacement needs less: it says it changes
something, so its best match among the older decisions is what it replaces, on one shared word
when it says so plainly ("Decision update:", "no longer", "instead of", "replacing"), on two
when only a word hints at it ("now", "again", "switched"). A restatement of the same claim is
the `repeat` rule's (rules.py), tried first.
"""

from __future__ import annotations

import re

from claude_mem.marks.claims import Claim, content_words
from claude_mem.text.scope import names, related

RIVAL_WORDS = 2
RIVAL_SHARE = 0.25
PREFIX = 6
# Says it replaces what was decided before ("from now on" is how rules start, not how they change).
_REPLACES = re.compile(r"\b(?:decision\s+update|update[ds]?\s*:|changed\s+(?:our|my|the)\s+mind|no\s+longer|instead\s+of"
                       r"|replac\w*|supersed\w*|revert\w*|retir\w*)\b", re.IGNORECASE)
_HINTS = re.compile(r"\b(?:now|again|anymore|any\s+more|instead|switch(?:ed|es|ing)?|dropped|removed|mov(?:e|es|ed|ing)\s+to)\b",
                    re.IGNORECASE)
_GENERIC = content_words("decision update rule convention policy team every always never must only use uses new old all each "
                         "stated agreed decided from now on")
_IDENTIFIER = re.compile(r"[\w.-]*[\w-][/._][\w./-]*\w")


def replaces(claim: Claim) -> int:
    """How plainly a decision says it replaces an earlier one: 2 says so, 1 hints at it, 0 not at all."""
    text = re.sub(r"\bfrom\s+now\s+on\b", " ", f"{claim.head} {claim.body}", flags=re.IGNORECASE)
    return 2 if _REPLACES.search(text) else 1 if _HINTS.search(text) else 0


def _subject(claim: Claim, *, scoped: bool = True) -> tuple[set[str], set[str]]:
    """(identifiers, words) of a decision's headline; its scope's own names left out when `scoped`."""
    scope = names(claim.scope) | set(claim.scope.lower().split("/")) if scoped else set()
    identifiers = {m.group().lower().strip("./") for m in _IDENTIFIER.finditer(claim.title)} - {claim.scope.lower(), ""}
    return identifiers, {w[:PREFIX] for w in content_words(claim.title) - _GENERIC - scope}


def marks_on(new: Claim, older: list[Claim], *, supersedes_already: bool = False) -> list[tuple[int, str, str, str]]:
    """(old id, relation, rule, reason) for what the decision `new` does to the older decisions."""
    if new.type != "decision":
        return []
    plainly = replaces(new)
    ids, words = _subject(new, scoped=not plainly)
    scored = []
    for old in older:
        if old.type != "decision" or old.id == new.id or not related(new.scope, old.scope):
            continue
        old_ids, old_words = _subject(old, scoped=not plainly)
        shared_ids, shared = ids & old_ids, words & old_words
        strong = bool(shared_ids) or (len(shared) >= RIVAL_WORDS and len(shared) >= RIVAL_SHARE * min(len(words), len(old_words)))
        scored.append(((len(shared_ids), len(shared), old.created, old.id), strong, old, sorted(shared_ids | shared)))
    if plainly:
        best = max((s for s in scored if s[0][0] or s[0][1] >= (1 if plainly == 2 else RIVAL_WORDS)), key=lambda s: s[0], default=None)
        if best is not None:
            return [] if supersedes_already else [(best[2].id, "supersedes", "restated", f"restated: {new.title}"[:120])]
    return [(old.id, "conflicts", "rival", f"rival claims on {', '.join(shared[:4])}"[:120]) for _, strong, old, shared in scored
            if strong]
