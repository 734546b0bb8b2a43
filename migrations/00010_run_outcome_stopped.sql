-- A run the user stopped before any request completed (stopped before its start instant, say)
-- has the outcome 'stopped', not 'failed': nothing was tested, so nothing failed
-- (metrics.OutcomeStopped). The generated column of 00006 is made again with that rule; SQLite
-- computes it for every stored run as for every run that ends later. The CASE is
-- metrics.OutcomeOf written in SQL (0.05 is metrics.MaxPassedErrorRate); store's
-- TestOutcomeColumnIsOutcomeOf checks the two agree.

-- +goose Up
DROP INDEX runs_by_outcome;
ALTER TABLE runs DROP COLUMN outcome;
ALTER TABLE runs ADD COLUMN outcome TEXT GENERATED ALWAYS AS (
    CASE
        WHEN status IN ('failed', 'interrupted') THEN 'failed'
        WHEN status NOT IN ('finished', 'stopped') THEN NULL
        WHEN requests <= 0 AND status = 'stopped' THEN 'stopped'
        WHEN requests <= 0 OR error_rate >= 1 THEN 'failed'
        WHEN error_rate > 0.05 OR thresholds_ok = 0 THEN 'finished_with_errors'
        ELSE 'passed'
    END
) VIRTUAL;
CREATE INDEX runs_by_outcome ON runs (outcome, started_at);
-- Such a run stored before this rule kept the error the old one gave it; a 'stopped' run failed
-- at nothing, so it has none (runs.endMessage), also when it was stored by an older version.
UPDATE runs SET error = ''
    WHERE status = 'stopped' AND requests <= 0 AND error = 'no successful response: no request was sent';

-- +goose Down
DROP INDEX runs_by_outcome;
ALTER TABLE runs DROP COLUMN outcome;
ALTER TABLE runs ADD COLUMN outcome TEXT GENERATED ALWAYS AS (
    CASE
        WHEN status IN ('failed', 'interrupted') THEN 'failed'
        WHEN status NOT IN ('finished', 'stopped') THEN NULL
        WHEN requests <= 0 OR error_rate >= 1 THEN 'failed'
        WHEN error_rate > 0.05 OR thresholds_ok = 0 THEN 'finished_with_errors'
        ELSE 'passed'
    END
) VIRTUAL;
CREATE INDEX runs_by_outcome ON runs (outcome, started_at);
