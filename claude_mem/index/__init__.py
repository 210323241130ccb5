"""The semantic index: Chroma kept in step with SQLite (a row's documents, their vectors from an
offline embedder, catch-ups, rebuilds, drift, a shared server's installations). It writes only
documents, never memories; recall/ ranks what it finds."""
