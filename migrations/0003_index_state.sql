-- What the semantic index (Chroma) holds, so rows missed while Chroma was down are indexed later.
-- SQLite stays the source of truth: this table only says which rows were sent to which collection
-- (the collection's id changes when the index folder is deleted or a server is swapped in, and
-- everything is then indexed again).

CREATE TABLE index_state (
    kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary', 'prompt')),
    row_id INTEGER NOT NULL,
    indexed_at INTEGER NOT NULL,              -- epoch ms
    collection_id TEXT NOT NULL DEFAULT '',   -- the Chroma collection that holds the documents
    PRIMARY KEY (kind, row_id)
) WITHOUT ROWID;
