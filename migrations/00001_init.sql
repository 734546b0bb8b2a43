-- Volley's first schema. Times are stored by the Go driver as UTC text
-- ("2006-01-02 15:04:05.999999999+00:00"), which sorts chronologically.
-- JSON columns hold the exact bytes the API serves; json_valid guards them.
-- Histograms are opaque encoded blobs (NULL when absent).
-- plans and runs use AUTOINCREMENT so a deleted id is never handed out again:
-- /api/runs/7 must never start pointing at a different run.

-- +goose Up
CREATE TABLE plans (
    id         INTEGER  PRIMARY KEY AUTOINCREMENT,
    name       TEXT     NOT NULL,
    spec       TEXT     NOT NULL CHECK (json_valid(spec)),
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);

CREATE TABLE runs (
    id         INTEGER  PRIMARY KEY AUTOINCREMENT,
    plan_id    INTEGER  NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    plan_name  TEXT     NOT NULL,
    status     TEXT     NOT NULL
               CHECK (status IN ('running', 'finished', 'stopped', 'failed', 'interrupted')),
    started_at DATETIME NOT NULL,
    ended_at   DATETIME,
    duration_s REAL     NOT NULL DEFAULT 0,
    requests   INTEGER  NOT NULL DEFAULT 0,
    rps        REAL     NOT NULL DEFAULT 0,
    p95_ms     REAL     NOT NULL DEFAULT 0,
    error_rate REAL     NOT NULL DEFAULT 0,
    error      TEXT     NOT NULL DEFAULT '',
    -- the plan as it was when the run started (the plan may be edited later)
    plan_spec  TEXT     NOT NULL CHECK (json_valid(plan_spec))
);

-- Listing is "ORDER BY started_at DESC, id DESC". An ascending index ends in the
-- rowid (= id), so walking it backwards yields exactly that order with no sort step.
CREATE INDEX runs_by_started ON runs (started_at);
-- Also the index the plans -> runs cascade uses.
CREATE INDEX runs_by_plan ON runs (plan_id, started_at);
CREATE INDEX runs_by_status ON runs (status, started_at);

-- One row per run-second.
CREATE TABLE run_samples (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    second INTEGER NOT NULL,
    t_ms   INTEGER NOT NULL, -- end of the second, unix milliseconds
    data   TEXT    NOT NULL CHECK (json_valid(data)),
    hist   BLOB,             -- that second's encoded latency histogram
    PRIMARY KEY (run_id, second)
);

-- One row per ended run: the summary JSON and the run's merged latency histogram.
CREATE TABLE run_summaries (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    data   TEXT    NOT NULL CHECK (json_valid(data)),
    hist   BLOB
);

-- +goose Down
DROP TABLE run_summaries;
DROP TABLE run_samples;
DROP TABLE runs;
DROP TABLE plans;
