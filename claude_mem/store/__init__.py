"""SQLite store: connection and migrations (db), the event queue (queue), and records."""
