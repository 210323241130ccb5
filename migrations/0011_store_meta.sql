-- Facts about the store itself, by name. The first: `keyword_tokenizer`, the version of the
-- rewriting the keyword index was built with (text/cjk.py TOKENIZER_VERSION). The three FTS5
-- tables are contentless (0009): a row is deleted from them by sending the tokens it was indexed
-- with, which the triggers make again with today's `cjk_spaced`. Once that function gives other
-- tokens than it did when a row was indexed, such a delete corrupts the index. So the version it
-- was built with is kept here, and store/db.py (rebuild_stale_keywords) rebuilds the tables from
-- the rows, and stamps the new version, when it differs from the code's.
CREATE TABLE store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('keyword_tokenizer', '1');
