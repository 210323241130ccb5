"""The weights and pool sizes of search, in one place: measured on LoCoMo (bench/locomo.py) and on
synthetic developer memory (bench/scale.py). Why each is what it is: docs/search-tuning.md.
Modules read them as `tuning.NAME` at call time, so a test can set one."""

# The same weights serve every caller.
W_BM25 = 0.15  # share of BM25 in an observation's or summary's score (the rest is cosine)
# What was said (a prompt and Claude's reply) leans on its words more than what was noted:
# LoCoMo dev turns mode 0.775 at 0.15, 0.798 at 0.45 (0.5 and 0.4 within 0.003), facts unchanged.
W_BM25_SAID = 0.45
# A prompt's neighbours (the turns before and after it) lend it this share of their BM25: an
# answer is often worded by the question before it. Dev turns 0.791 -> 0.801 (0.3: 0.797, 1.0: 0.792).
NEIGHBOUR_SHARE = 0.6
NEIGHBOURS_OF = 10  # the best keyword-matched prompts whose neighbours join (dev turns: 0.803 at 5 or 10, 0.798 at 50)
TURN_SPREAD = 3  # observations a prompt brings forward that did not match themselves (turns.forward)
CENTRING = 0.9  # share of the candidate pool's mean vector removed before cosines (semantic.set_cosines)
LANGUAGE_SIDE = 3  # candidates written in CJK (or not) that make their side's own mean the one removed (set_cosines)
DATE_BOOST = 0.2  # a memory from a day/month the query names
SESSION_BOOST = 0.7  # times the best score among candidates of the same session
MIN_COSINE = 0.2  # a memory sharing no word with the query must be at least this close in meaning
# The same floor for multilingual-e5, whose cosines all lie high (unrelated texts 0.75-0.86,
# evidence from 0.78; LoCoMo facts 0.670 -> 0.672 with it: docs/multilingual.md).
MIN_COSINE_E5 = 0.8
POOL = 50  # candidates each search contributes to the fusion (at least 3 x limit)
RAW_FACTOR = 4  # unfiltered nearest documents fetched per document wanted, then filtered in SQLite (semantic)
BRUTE_FORCE_ROWS = 100  # a filtered set this small is scored from its stored vectors (semantic)
ESCALATE = 4  # then this many times more nearest are fetched unfiltered before Chroma's slow `where` (semantic)
FTS_BUDGET = 2000  # rows the keyword query may match before its most common words are left out (keyword)
OVERLAP = True  # the semantic side's first step in a thread while the keyword side runs (search.py, S7)
OVERLAP = True  # the semantic side's waits in a thread while SQLite works (semantic._start, S7)
