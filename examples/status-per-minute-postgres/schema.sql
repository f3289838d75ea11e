-- The table the status-per-minute job upserts into (examples/status-per-minute-postgres).
-- One row per minute and HTTP status; the primary key is the sink's key_columns.
CREATE TABLE IF NOT EXISTS status_per_minute (
  minute   timestamptz NOT NULL,  -- the window's start (UTC)
  status   integer     NOT NULL,  -- HTTP status code
  requests bigint      NOT NULL,  -- requests with that status in that minute
  bytes    bigint,                -- their response bytes (null: none sent a size)
  PRIMARY KEY (minute, status)
);
