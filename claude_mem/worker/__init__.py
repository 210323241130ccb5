"""The per-session worker: queue -> observer model -> observations and summaries."""
