"""Marks: which observations are no longer true, by rules that need no model.

  claims.py  what one observation claims, read for comparison (subject, values, checks)
  rules.py   the rules: repeat, resolved, rerun, changed
  apply.py   running them: at store time, after an import, over an older database, on demand

The marks themselves live in the `marks` table (store/marks.py, where the words are defined),
beside the ones the observer model and people make.
"""
