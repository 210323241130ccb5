"""Recall: reading memory back (search, index, the views the MCP server shows). Never writes
memories. What the hooks inject (the digest, the pushes) is push/, which this builds on."""
