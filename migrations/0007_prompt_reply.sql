-- Claude's final reply to each prompt (the Stop hook's last_assistant_message, already redacted
-- and cut by the hook), kept with its prompt: a turn is recalled by what was said in it as well
-- as by what was noted of it (issue 14). The keyword index of prompts gains the column, so it
-- is made again (an external-content table cannot add a column) and rebuilt from the rows.

ALTER TABLE user_prompts ADD COLUMN reply_text TEXT NOT NULL DEFAULT '';

DROP TRIGGER user_prompts_ai;
DROP TRIGGER user_prompts_ad;
DROP TRIGGER user_prompts_au;
DROP TABLE user_prompts_fts;

CREATE VIRTUAL TABLE user_prompts_fts USING fts5 (
    prompt_text, reply_text,
    content = 'user_prompts', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO user_prompts_fts (user_prompts_fts) VALUES ('rebuild');

CREATE TRIGGER user_prompts_ai AFTER INSERT ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (rowid, prompt_text, reply_text) VALUES (new.id, new.prompt_text, new.reply_text);
END;
CREATE TRIGGER user_prompts_ad AFTER DELETE ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text, reply_text)
    VALUES ('delete', old.id, old.prompt_text, old.reply_text);
END;
-- Only when the text changes: a prompt's row is otherwise left as it is, and the reply is the
-- one update it gets.
CREATE TRIGGER user_prompts_au AFTER UPDATE OF prompt_text, reply_text ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text, reply_text)
    VALUES ('delete', old.id, old.prompt_text, old.reply_text);
    INSERT INTO user_prompts_fts (rowid, prompt_text, reply_text) VALUES (new.id, new.prompt_text, new.reply_text);
END;
