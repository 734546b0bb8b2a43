-- A run's outcome (passed, finished_with_errors, failed; NULL while it runs), so History can
-- filter on it in SQL. It is a generated column: SQLite computes it from the columns every run
-- already has (status, requests, error_rate, thresholds_ok), for the rows stored before this
-- migration as for every run that ends or is imported later, so it can never disagree with them.
-- The CASE is metrics.OutcomeOf written in SQL (0.05 is metrics.MaxPassedErrorRate);
-- store's TestOutcomeColumnIsOutcomeOf checks the two agree.

-- +goose Up
ALTER TABLE runs ADD COLUMN outcome TEXT GENERATED ALWAYS AS (
    CASE
        WHEN status IN ('failed', 'interrupted') THEN 'failed'
        WHEN status NOT IN ('finished', 'stopped') THEN NULL
        WHEN requests <= 0 OR error_rate >= 1 THEN 'failed'
        WHEN error_rate > 0.05 OR thresholds_ok = 0 THEN 'finished_with_errors'
        ELSE 'passed'
    END
) VIRTUAL;

-- "runs with outcome X", newest first, straight from the index.
CREATE INDEX runs_by_outcome ON runs (outcome, started_at);

-- +goose Down
DROP INDEX runs_by_outcome;
ALTER TABLE runs DROP COLUMN outcome;
