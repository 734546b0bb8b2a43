package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

func TestSecretsPutListReadDelete(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	info, created, err := s.PutSecret(ctx, "API_KEY", "v1")
	if err != nil || !created || info.Name != "API_KEY" {
		t.Fatalf("put: %+v %v %v", info, created, err)
	}
	first := info.CreatedAt
	if _, created, err = s.PutSecret(ctx, "API_KEY", "v2"); err != nil || created {
		t.Fatalf("replace: created %v, %v", created, err)
	}
	if _, _, err = s.PutSecret(ctx, "B", "b"); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListSecrets(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "API_KEY" || list[1].Name != "B" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if !list[0].CreatedAt.Equal(first) || list[0].UpdatedAt.Before(first) {
		t.Errorf("times: %+v (created %v)", list[0], first)
	}
	vals, err := s.SecretValues(ctx, []string{"API_KEY", "MISSING"})
	if err != nil || len(vals) != 1 || vals["API_KEY"] != "v2" {
		t.Fatalf("values: %v %v", vals, err)
	}
	if err := s.DeleteSecret(ctx, "API_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret(ctx, "API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if vals, _ := s.SecretValues(ctx, []string{"API_KEY"}); len(vals) != 0 {
		t.Errorf("deleted value still read: %v", vals)
	}
	// The schema refuses what the API would never send.
	if _, _, err := s.PutSecret(ctx, "E", ""); err == nil {
		t.Error("an empty value was stored")
	}
}

// A statement logged as slow shows "?" for its values: a secret or a plan never reaches the log.
func TestSlowStatementLogHasNoValues(t *testing.T) {
	s := newStore(t)
	var buf testutil.SyncBuffer
	s.db.Logger = dbLogger(&buf, time.Nanosecond) // every statement is "slow"
	if _, _, err := s.PutSecret(t.Context(), "K", "v4lue-canary"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SecretValues(t.Context(), []string{"K"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "INSERT INTO secrets") || !strings.Contains(out, "?") {
		t.Fatalf("no slow statement logged: %q", out)
	}
	if strings.Contains(out, "v4lue-canary") || strings.Contains(out, "'K'") {
		t.Errorf("a value is in the log: %q", out)
	}
}
