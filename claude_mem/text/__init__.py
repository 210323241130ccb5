"""Text as memory reads and shows it. Standard library only: the hooks use every module here.

  terms.py          the words of a query, as the keyword index (SQLite FTS5) matches them; stems
  cjk.py            Chinese, Japanese and Korean runs as the overlapping pairs the index holds
  shell.py          one reading of a shell command line: its commands, without the scaffolding
  command_keys.py   a shell line's commands of interest as `program subcommand`
  shorten.py        a text cut to a length, marked with an ellipsis
  clock.py          moments as people read them, in local time
  storable.py       text as it enters, made storable (surrogates resolved); JSON Lines read and written safely
"""
