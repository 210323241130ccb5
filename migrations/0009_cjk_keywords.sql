-- Keyword search for text written without spaces (issue 27): FTS5's unicode61 tokenizer keeps a
-- run of Han or kana characters as one token, so no Chinese or Japanese query word matched. The
-- three keyword indexes are made again over the text as `cjk_spaced` rewrites it (text/cjk.py:
-- each CJK run as its overlapping character pairs, everything else unchanged), and filled from
-- the rows. They are contentless now: what they index is no longer the rows' text, so FTS5 must
-- never read it back from the tables (nothing does: snippets are made in Python, recall/hits.py).
-- Every connection registers the function (store/db.py connect); deleting a row from a contentless
-- index takes the values it was indexed with, so the triggers rewrite the old values too.

DROP TRIGGER observations_ai;
DROP TRIGGER observations_ad;
DROP TRIGGER observations_au;
DROP TABLE observations_fts;
DROP TRIGGER session_summaries_ai;
DROP TRIGGER session_summaries_ad;
DROP TRIGGER session_summaries_au;
DROP TABLE session_summaries_fts;
DROP TRIGGER user_prompts_ai;
DROP TRIGGER user_prompts_ad;
DROP TRIGGER user_prompts_au;
DROP TABLE user_prompts_fts;

CREATE VIRTUAL TABLE observations_fts USING fts5 (
    title, subtitle, narrative, facts, concepts,
    content = '', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    SELECT id, cjk_spaced(title), cjk_spaced(subtitle), cjk_spaced(narrative), cjk_spaced(facts), cjk_spaced(concepts)
    FROM observations;
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, cjk_spaced(new.title), cjk_spaced(new.subtitle), cjk_spaced(new.narrative), cjk_spaced(new.facts),
            cjk_spaced(new.concepts));
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, cjk_spaced(old.title), cjk_spaced(old.subtitle), cjk_spaced(old.narrative),
            cjk_spaced(old.facts), cjk_spaced(old.concepts));
END;
CREATE TRIGGER observations_au AFTER UPDATE OF title, subtitle, narrative, facts, concepts ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, cjk_spaced(old.title), cjk_spaced(old.subtitle), cjk_spaced(old.narrative),
            cjk_spaced(old.facts), cjk_spaced(old.concepts));
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, cjk_spaced(new.title), cjk_spaced(new.subtitle), cjk_spaced(new.narrative), cjk_spaced(new.facts),
            cjk_spaced(new.concepts));
END;

CREATE VIRTUAL TABLE session_summaries_fts USING fts5 (
    request, investigated, learned, completed, next_steps, notes,
    content = '', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO session_summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    SELECT id, cjk_spaced(request), cjk_spaced(investigated), cjk_spaced(learned), cjk_spaced(completed),
           cjk_spaced(next_steps), cjk_spaced(notes)
    FROM session_summaries;
CREATE TRIGGER session_summaries_ai AFTER INSERT ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES (new.id, cjk_spaced(new.request), cjk_spaced(new.investigated), cjk_spaced(new.learned),
            cjk_spaced(new.completed), cjk_spaced(new.next_steps), cjk_spaced(new.notes));
END;
CREATE TRIGGER session_summaries_ad AFTER DELETE ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES ('delete', old.id, cjk_spaced(old.request), cjk_spaced(old.investigated), cjk_spaced(old.learned),
            cjk_spaced(old.completed), cjk_spaced(old.next_steps), cjk_spaced(old.notes));
END;
CREATE TRIGGER session_summaries_au AFTER UPDATE OF request, investigated, learned, completed, next_steps, notes
    ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES ('delete', old.id, cjk_spaced(old.request), cjk_spaced(old.investigated), cjk_spaced(old.learned),
            cjk_spaced(old.completed), cjk_spaced(old.next_steps), cjk_spaced(old.notes));
    INSERT INTO session_summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES (new.id, cjk_spaced(new.request), cjk_spaced(new.investigated), cjk_spaced(new.learned),
            cjk_spaced(new.completed), cjk_spaced(new.next_steps), cjk_spaced(new.notes));
END;

CREATE VIRTUAL TABLE user_prompts_fts USING fts5 (
    prompt_text, reply_text,
    content = '', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO user_prompts_fts (rowid, prompt_text, reply_text)
    SELECT id, cjk_spaced(prompt_text), cjk_spaced(reply_text) FROM user_prompts;
CREATE TRIGGER user_prompts_ai AFTER INSERT ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (rowid, prompt_text, reply_text)
    VALUES (new.id, cjk_spaced(new.prompt_text), cjk_spaced(new.reply_text));
END;
CREATE TRIGGER user_prompts_ad AFTER DELETE ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text, reply_text)
    VALUES ('delete', old.id, cjk_spaced(old.prompt_text), cjk_spaced(old.reply_text));
END;
CREATE TRIGGER user_prompts_au AFTER UPDATE OF prompt_text, reply_text ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text, reply_text)
    VALUES ('delete', old.id, cjk_spaced(old.prompt_text), cjk_spaced(old.reply_text));
    INSERT INTO user_prompts_fts (rowid, prompt_text, reply_text)
    VALUES (new.id, cjk_spaced(new.prompt_text), cjk_spaced(new.reply_text));
END;
