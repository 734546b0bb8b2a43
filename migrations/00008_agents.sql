-- Runs over agents (issue 14): how many agents generated a run's load (0: this server's own
-- engine), whether the run was degraded (an agent lost: some seconds miss its share), and each
-- agent's own seconds as the coordinator received them (the merged second stays in run_samples).
-- An agent's second may arrive twice (its spool replayed after a reconnect): INSERT OR IGNORE on
-- the primary key stores it once. Written by runs (StoreSink's end of run, the agents' hook).

-- +goose Up
ALTER TABLE runs ADD COLUMN agents INTEGER NOT NULL DEFAULT 0 CHECK (agents >= 0);
ALTER TABLE runs ADD COLUMN degraded BOOLEAN NOT NULL DEFAULT 0 CHECK (degraded IN (0, 1));

-- One row per agent per run-second: the agent's own sample JSON (metrics.Sample, its histogram
-- left out: the merged second has the run's).
CREATE TABLE run_agent_seconds (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    agent  TEXT    NOT NULL CHECK (length(agent) BETWEEN 1 AND 63),
    second INTEGER NOT NULL,
    sample TEXT    NOT NULL CHECK (json_valid(sample)),
    PRIMARY KEY (run_id, second, agent) -- paged by second (GET /api/runs/:id/agents)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE run_agent_seconds;
ALTER TABLE runs DROP COLUMN degraded;
ALTER TABLE runs DROP COLUMN agents;
