-- The vectors of each indexed row's texts, beside Chroma's (index/vectors.py). Search reads a
-- candidate's vectors from here by row, cheaper than Chroma's get by id, and an observation's
-- facts have theirs here only: one Chroma document per observation keeps the memory service
-- small at 100k, and a question about one fact is scored by that fact's own vector
-- (docs/search-tuning.md, "Facts' vectors in SQLite"). Derived data, like index_state: a row's
-- vectors are written in the same transaction as its index_state row.

-- Which collection (index_state.collection_id: collection, installation, layout) a vector was
-- made for: after a switch of model, the rows not yet indexed again have none for the new one.
CREATE TABLE vector_spaces (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

-- A row's vectors side by side in the key's b-tree, read in one lookup (~790 bytes each, under
-- the size SQLite keeps inside a 4 KB page).
CREATE TABLE vectors (
    kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary', 'prompt')),
    row_id INTEGER NOT NULL,
    part TEXT NOT NULL,     -- the document key after the row's ref: 'main', 'fact:0', 'learned', 'reply', '' (a prompt)
    space INTEGER NOT NULL REFERENCES vector_spaces (id),
    vector BLOB NOT NULL,   -- float16, unit length
    PRIMARY KEY (kind, row_id, part)
) WITHOUT ROWID;

-- 1 once the row's vectors are in `vectors` (rows indexed before this migration are filled by
-- the next catch-up from Chroma's stored vectors, their facts embedded).
ALTER TABLE index_state ADD COLUMN vectors INTEGER NOT NULL DEFAULT 0;

-- A row deleted (forget, a session's rows replaced) takes its vectors with it, in its transaction.
CREATE TRIGGER observations_vectors_gone AFTER DELETE ON observations BEGIN
    DELETE FROM vectors WHERE kind = 'observation' AND row_id = old.id;
END;
CREATE TRIGGER summaries_vectors_gone AFTER DELETE ON session_summaries BEGIN
    DELETE FROM vectors WHERE kind = 'summary' AND row_id = old.id;
END;
CREATE TRIGGER prompts_vectors_gone AFTER DELETE ON user_prompts BEGIN
    DELETE FROM vectors WHERE kind = 'prompt' AND row_id = old.id;
END;
