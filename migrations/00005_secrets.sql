-- The server's secret store: values that plans use as {{secret.NAME}} (API keys, tokens). The
-- API and the CLI write values and list names; no answer ever carries a value, which is read
-- only when a run starts. Values are stored as they are: the database file is the server's own
-- (mode 0600), and a key kept beside it would protect nothing more. Names are what the API and
-- plans accept: 1-64 characters of [A-Za-z0-9_] not starting with a digit (checked in Go; the
-- CHECK guards the length).

-- +goose Up
CREATE TABLE secrets (
    name       TEXT     PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    value      TEXT     NOT NULL CHECK (length(CAST(value AS BLOB)) BETWEEN 1 AND 65536),
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE secrets;
