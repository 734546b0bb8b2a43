-- A controller restart loses nothing (issue 14): what a run over agents keeps so that a restarted
-- `volley serve` can take it over (cluster.Started as JSON: the controller id the agents were
-- prepared with, the agents in part order with their weights, the start instant, fence_after).
-- Written by the run's OnStart hook before the start is broadcast; NULL for a local run, and for
-- a run over agents that had not started. Read at start-up (store.ResumableRuns).

-- +goose Up
ALTER TABLE runs ADD COLUMN cluster TEXT CHECK (cluster IS NULL OR json_valid(cluster));

-- +goose Down
ALTER TABLE runs DROP COLUMN cluster;
