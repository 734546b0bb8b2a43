-- Users, sessions, API tokens and the audit log (authentication and roles).
-- Auth is on as soon as one user exists; with none, a loopback-bound server treats its local user
-- as the admin and any other bind refuses to start.
-- Secrets are never stored: passwords as argon2id PHC strings, session and API tokens as the hex
-- SHA-256 of the random token (32 bytes from crypto/rand, so a plain hash is enough).

-- +goose Up
CREATE TABLE users (
    id            INTEGER  PRIMARY KEY AUTOINCREMENT,
    name          TEXT     NOT NULL UNIQUE COLLATE NOCASE CHECK (length(name) BETWEEN 1 AND 64),
    role          TEXT     NOT NULL CHECK (role IN ('admin', 'tester', 'viewer')),
    password_hash TEXT     NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);

CREATE TABLE sessions (
    token_hash   TEXT     PRIMARY KEY CHECK (length(token_hash) = 64),
    user_id      INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL -- absolute end, whatever the activity
) WITHOUT ROWID;
CREATE INDEX sessions_by_user ON sessions (user_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

CREATE TABLE api_tokens (
    id           INTEGER  PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label        TEXT     NOT NULL DEFAULT '' CHECK (length(label) <= 100),
    token_hash   TEXT     NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);

-- Who did what: logins, user and token changes, runs started and stopped (with their target hosts).
-- actor is a user name (kept as text: the entry outlives the user), "local" for the loopback
-- user when auth is off, "cli" for the volley user commands.
CREATE TABLE audit_log (
    id     INTEGER  PRIMARY KEY AUTOINCREMENT,
    at     DATETIME NOT NULL,
    actor  TEXT     NOT NULL,
    action TEXT     NOT NULL,
    target TEXT     NOT NULL DEFAULT '',
    detail TEXT     NOT NULL DEFAULT '{}' CHECK (json_valid(detail)),
    addr   TEXT     NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE api_tokens;
DROP TABLE sessions;
DROP TABLE users;
