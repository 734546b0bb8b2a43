package store

import (
	"errors"
	"testing"
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
