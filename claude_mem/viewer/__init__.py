"""The web viewer: a read-only window on memory (live feed, search, details, health).

`app.create_app` builds the Starlette app; `claude-mem viewer` (cli/viewer.py) serves it with
uvicorn. The page is plain HTML/CSS/JS shipped in `static/`, so it works offline.
"""
