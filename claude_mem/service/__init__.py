"""The memory service: one warm process per data folder that owns the embedding model, the
Chroma client and the indexing of committed rows, and answers searches over a Unix socket.

  protocol.py  where the socket, lock and info file live; the wire format (stdlib only)
  client.py    ask the service, start it when it is missing, never wait on it (stdlib only:
               hooks use it)
  search.py    the front doors' search and teammates' records: through the service, keywords
               alone when it cannot answer in time, or in their own process
  control.py   its state for `status` and `doctor`, and stopping it
  indexer.py   its indexing of committed rows, in a thread of its own
  server.py    the service itself (imports chromadb and onnxruntime through recall/)
"""
