-- The schema of a logs.db written by llm 0.31 (before the message store),
-- dumped from a database that llm 0.31 itself created, with its migration log
-- so that newer llm versions upgrade it as they would a user's file.
CREATE TABLE "_llm_migrations" (
   "name" TEXT PRIMARY KEY,
   "applied_at" TEXT
);
CREATE TABLE "conversations" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "model" TEXT
);
CREATE TABLE "attachments" (
   "id" TEXT PRIMARY KEY,
   "type" TEXT,
   "path" TEXT,
   "url" TEXT,
   "content" BLOB
);
CREATE TABLE "prompt_attachments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "attachment_id" TEXT REFERENCES "attachments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "attachment_id")
);
CREATE TABLE "schemas" (
   "id" TEXT PRIMARY KEY,
   "content" TEXT
);
CREATE TABLE "responses" (
   "id" TEXT PRIMARY KEY,
   "model" TEXT,
   "prompt" TEXT,
   "system" TEXT,
   "prompt_json" TEXT,
   "options_json" TEXT,
   "response" TEXT,
   "response_json" TEXT,
   "conversation_id" TEXT REFERENCES "conversations"("id"),
   "duration_ms" INTEGER,
   "datetime_utc" TEXT,
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "token_details" TEXT,
   "schema_id" TEXT REFERENCES "schemas"("id")
, "resolved_model" TEXT);
CREATE TABLE "fragments" (
   "id" INTEGER PRIMARY KEY,
   "hash" TEXT,
   "content" TEXT,
   "datetime_utc" TEXT,
   "source" TEXT
);
CREATE TABLE "fragment_aliases" (
   "alias" TEXT PRIMARY KEY,
   "fragment_id" INTEGER REFERENCES "fragments"("id")
);
CREATE TABLE "prompt_fragments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "fragment_id", "order")
);
CREATE TABLE "system_fragments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "fragment_id", "order")
);
CREATE TABLE "tools" (
   "id" INTEGER PRIMARY KEY,
   "hash" TEXT,
   "name" TEXT,
   "description" TEXT,
   "input_schema" TEXT
, "plugin" TEXT);
CREATE TABLE "tool_responses" (
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "response_id" TEXT REFERENCES "responses"("id"),
   PRIMARY KEY ("tool_id", "response_id")
);
CREATE TABLE "tool_calls" (
   "id" INTEGER PRIMARY KEY,
   "response_id" TEXT REFERENCES "responses"("id"),
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "name" TEXT,
   "arguments" TEXT,
   "tool_call_id" TEXT
);
CREATE TABLE "tool_instances" (
   "id" INTEGER PRIMARY KEY,
   "plugin" TEXT,
   "name" TEXT,
   "arguments" TEXT
);
CREATE TABLE "tool_results" (
   "id" INTEGER PRIMARY KEY,
   "response_id" TEXT REFERENCES "responses"("id"),
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "name" TEXT,
   "output" TEXT,
   "tool_call_id" TEXT,
   "instance_id" INTEGER REFERENCES "tool_instances"("id")
, "exception" TEXT);
CREATE UNIQUE INDEX "idx_fragments_hash"
    ON "fragments" ("hash");
CREATE UNIQUE INDEX "idx_tools_hash"
    ON "tools" ("hash");
CREATE VIRTUAL TABLE "responses_fts" USING FTS5 (
    "prompt", "response",
    content="responses"
);
CREATE TRIGGER "responses_ai" AFTER INSERT ON "responses" BEGIN
  INSERT INTO "responses_fts" (rowid, "prompt", "response") VALUES (new.rowid, new."prompt", new."response");
END;
CREATE TRIGGER "responses_ad" AFTER DELETE ON "responses" BEGIN
  INSERT INTO "responses_fts" ("responses_fts", rowid, "prompt", "response") VALUES('delete', old.rowid, old."prompt", old."response");
END;
CREATE TRIGGER "responses_au" AFTER UPDATE ON "responses" BEGIN
  INSERT INTO "responses_fts" ("responses_fts", rowid, "prompt", "response") VALUES('delete', old.rowid, old."prompt", old."response");
  INSERT INTO "responses_fts" (rowid, "prompt", "response") VALUES (new.rowid, new."prompt", new."response");
END;
CREATE TABLE "tool_results_attachments" (
   "tool_result_id" INTEGER REFERENCES "tool_results"("id"),
   "attachment_id" TEXT REFERENCES "attachments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("tool_result_id", "attachment_id")
);
INSERT INTO _llm_migrations VALUES ('m001_initial', '2026-12-02 16:14:15.868098+00:00');
INSERT INTO _llm_migrations VALUES ('m002_id_primary_key', '2026-12-02 16:14:15.871937+00:00');
INSERT INTO _llm_migrations VALUES ('m003_chat_id_foreign_key', '2026-12-02 16:14:15.880969+00:00');
INSERT INTO _llm_migrations VALUES ('m004_column_order', '2026-12-02 16:14:15.884908+00:00');
INSERT INTO _llm_migrations VALUES ('m004_drop_provider', '2026-12-02 16:14:15.888601+00:00');
INSERT INTO _llm_migrations VALUES ('m005_debug', '2026-12-02 16:14:15.891993+00:00');
INSERT INTO _llm_migrations VALUES ('m006_new_logs_table', '2026-12-02 16:14:15.900787+00:00');
INSERT INTO _llm_migrations VALUES ('m007_finish_logs_table', '2026-12-02 16:14:15.906141+00:00');
INSERT INTO _llm_migrations VALUES ('m008_reply_to_id_foreign_key', '2026-12-02 16:14:15.911886+00:00');
INSERT INTO _llm_migrations VALUES ('m008_fix_column_order_in_logs', '2026-12-02 16:14:15.916159+00:00');
INSERT INTO _llm_migrations VALUES ('m009_delete_logs_table_if_empty', '2026-12-02 16:14:15.918472+00:00');
INSERT INTO _llm_migrations VALUES ('m010_create_new_log_tables', '2026-12-02 16:14:15.922112+00:00');
INSERT INTO _llm_migrations VALUES ('m011_fts_for_responses', '2026-12-02 16:14:15.928098+00:00');
INSERT INTO _llm_migrations VALUES ('m012_attachments_tables', '2026-12-02 16:14:15.932025+00:00');
INSERT INTO _llm_migrations VALUES ('m013_usage', '2026-12-02 16:14:15.936874+00:00');
INSERT INTO _llm_migrations VALUES ('m014_schemas', '2026-12-02 16:14:15.957356+00:00');
INSERT INTO _llm_migrations VALUES ('m015_fragments_tables', '2026-12-02 16:14:15.965622+00:00');
INSERT INTO _llm_migrations VALUES ('m016_fragments_table_pks', '2026-12-02 16:14:15.973747+00:00');
INSERT INTO _llm_migrations VALUES ('m017_tools_tables', '2026-12-02 16:14:15.981392+00:00');
INSERT INTO _llm_migrations VALUES ('m017_tools_plugin', '2026-12-02 16:14:15.983717+00:00');
INSERT INTO _llm_migrations VALUES ('m018_tool_instances', '2026-12-02 16:14:15.994180+00:00');
INSERT INTO _llm_migrations VALUES ('m019_resolved_model', '2026-12-02 16:14:15.996550+00:00');
INSERT INTO _llm_migrations VALUES ('m020_tool_results_attachments', '2026-12-02 16:14:15.999093+00:00');
INSERT INTO _llm_migrations VALUES ('m021_tool_results_exception', '2026-12-02 16:14:16.001379+00:00');
