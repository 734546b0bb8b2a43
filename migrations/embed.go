// Package migrations holds Volley's SQLite schema as numbered goose SQL files, embedded in the binary.
package migrations

import "embed"

// FS holds every migration (NNNNN_name.sql, each with "-- +goose Up" and "-- +goose Down").
//
//go:embed *.sql
var FS embed.FS
