"""Recall: reading memory back (digest, search, MCP). Never writes memories."""
