-- Notes and tags on runs, and the indexes that keep history listing fast at thousands of runs.
-- Tags are lower-case labels ("baseline", "v2"): 1-40 characters of [a-z0-9._-], at most 20 per
-- run (the API validates the alphabet and the count; the CHECK guards the length).
--
-- Sorting: each sortable list column gets its own index. An index on (col) ends in the rowid
-- (= id), so "ORDER BY col DESC, id DESC LIMIT n" (or ASC, ASC) walks it with no sort step.
-- Filters on plan, status or tag use runs_by_plan / runs_by_status / run_tags_by_tag.

-- +goose Up
ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT '';

CREATE TABLE run_tags (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag    TEXT    NOT NULL CHECK (length(tag) BETWEEN 1 AND 40),
    PRIMARY KEY (run_id, tag)
) WITHOUT ROWID;

-- "runs with tag X": the run ids straight from the index.
CREATE INDEX run_tags_by_tag ON run_tags (tag, run_id);

CREATE INDEX runs_by_duration   ON runs (duration_s);
CREATE INDEX runs_by_requests   ON runs (requests);
CREATE INDEX runs_by_rps        ON runs (rps);
CREATE INDEX runs_by_p95        ON runs (p95_ms);
CREATE INDEX runs_by_error_rate ON runs (error_rate);
CREATE INDEX runs_by_thresholds ON runs (thresholds_ok, started_at);

-- +goose Down
DROP INDEX runs_by_thresholds;
DROP INDEX runs_by_error_rate;
DROP INDEX runs_by_p95;
DROP INDEX runs_by_rps;
DROP INDEX runs_by_requests;
DROP INDEX runs_by_duration;
DROP TABLE run_tags;
ALTER TABLE runs DROP COLUMN notes;
