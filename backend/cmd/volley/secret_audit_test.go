package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
)

// `volley secret set` and `del` leave audit entries by the CLI actor, never with the value.
func TestSecretCommandsAudit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	value := cliCanary(t, "AUD")
	var out, errb bytes.Buffer
	for _, v := range []string{value, value + "2"} {
		if err := secretSet(strings.NewReader(v+"\n"), &out, &errb, db, "API_KEY"); err != nil {
			t.Fatalf("set: %v %s", err, errb.String())
		}
	}
	if err := secretDel(&out, &errb, db, "API_KEY"); err != nil {
		t.Fatal(err)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr: %q", errb.String())
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, total, err := auth.New(st, auth.Config{}).AuditLog(t.Context(), 10, 0)
	if err != nil || total != 3 {
		t.Fatalf("audit log: %d %v %+v", total, err, log)
	}
	want := []struct {
		action  string
		created any
	}{{auth.ActSecretDelete, nil}, {auth.ActSecretSet, false}, {auth.ActSecretSet, true}} // newest first
	for i, e := range log {
		if e.Actor != auth.CLIActor || e.Action != want[i].action || e.Target != "secret API_KEY" || e.Detail["created"] != want[i].created {
			t.Errorf("entry %d: %+v, want %s by %s", i, e, want[i].action, auth.CLIActor)
		}
		if strings.Contains(e.Target, value) || strings.Contains(strings.Join([]string{e.Addr, e.Action}, " "), value) {
			t.Errorf("entry %d shows the value", i)
		}
		for _, v := range e.Detail {
			if s, ok := v.(string); ok && strings.Contains(s, value) {
				t.Errorf("entry %d detail shows the value", i)
			}
		}
	}
}
