-- The target server's CPU at its busiest over a run (issue 15), so History can show and sort it:
-- a percent as the server monitor rule's series (metrics.ServerMonitor: the first process
-- monitor's processes summed, 100 = one core; else the first node monitor's host CPU of all its
-- cores), written when a run ends or is imported (runs.ServerCPUMax). NULL when the run had no
-- process or node monitor with a value, and for every run stored before this migration.

-- +goose Up
ALTER TABLE runs ADD COLUMN server_cpu_max REAL;

-- Sorting by it walks the index (see 00003).
CREATE INDEX runs_by_server_cpu_max ON runs (server_cpu_max);

-- +goose Down
DROP INDEX runs_by_server_cpu_max;
ALTER TABLE runs DROP COLUMN server_cpu_max;
