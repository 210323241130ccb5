"""Recall: reading memory back and ranking it (the one hybrid search over the keyword index and
the semantic index of index/, the views the MCP server shows). Never writes. What the hooks
inject (the digest, the pushes) is push/."""
