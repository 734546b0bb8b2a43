-- Whether every threshold of a run passed: 1, 0, or NULL (no thresholds, or not ended yet).
-- History shows it, so that a run that "finished" with failed thresholds is not mistaken for a pass.

-- +goose Up
ALTER TABLE runs ADD COLUMN thresholds_ok INTEGER CHECK (thresholds_ok IN (0, 1));

-- +goose Down
ALTER TABLE runs DROP COLUMN thresholds_ok;
