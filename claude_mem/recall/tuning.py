"""The weights and pool sizes of search, in one place, measured on LoCoMo (bench/locomo.py) and
on synthetic developer memory (bench/scale.py); what each value scored against the others is in
docs/search-tuning.md and bench/README.md. Modules read them as `tuning.NAME` at call time, so
a test can set one."""

W_BM25 = 0.15  # share of BM25 in an observation's or summary's score (the rest is cosine)
W_BM25_SAID = 0.45  # the same for what was said (a prompt and Claude's reply): it leans on its words
NEIGHBOUR_SHARE = 0.6  # of their BM25 a prompt's neighbouring turns lend it: an answer is often worded by the question
NEIGHBOURS_OF = 10  # the best keyword-matched prompts whose neighbours join the candidates
TURN_SPREAD = 3  # observations a prompt brings forward that did not match themselves (turns.forward)
CENTRING = 0.9  # share of the candidate pool's mean vector removed before cosines (semantic.set_cosines)
LANGUAGE_SIDE = 3  # candidates written in CJK (or not) that make their side's own mean the one removed (set_cosines)
DATE_BOOST = 0.2  # a memory from a day/month the query names
SESSION_BOOST = 0.7  # times the best score among candidates of the same session
MIN_COSINE = 0.2  # a memory sharing no word with the query must be at least this close in meaning
MIN_COSINE_E5 = 0.8  # the same floor for multilingual-e5, whose cosines all lie high (docs/multilingual.md)
POOL = 50  # candidates each search contributes to the fusion (at least 3 x limit)
RAW_FACTOR = 1  # unfiltered nearest documents fetched per document wanted, then filtered in SQLite (semantic; 4 until issue 49)
BRUTE_FORCE_ROWS = 100  # a filtered set this small is scored from its stored vectors (semantic)
ESCALATE = 4  # then, when fewer than FEW_PASSING passed, this many times more nearest are fetched before Chroma's slow `where` (semantic)
FEW_PASSING = 10  # when at least this many of the nearest fetched pass the filters, they are taken as they are (semantic)
FTS_BUDGET = 1000  # rows the keyword query may match before its most common words are left out (keyword; 2,000 until issue 49)
OVERLAP = True  # the semantic side's waits (embedding, nearest documents, vectors) in a thread while SQLite works (semantic._start)
