package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/importer"
	"github.com/volley-load/volley/backend/internal/plan"
)

// TestImportExitStatuses: 0 with everything imported (stdin), 4 with skipped elements listed on
// stderr, 2 for unreadable input; the printed plan validates.
func TestImportExitStatuses(t *testing.T) {
	var out, errb bytes.Buffer
	err := importMain(strings.NewReader(`curl -H 'X-A: 1' http://a.test/x`), &out, &errb, "curl", "-", importer.Options{})
	if err != nil || errb.Len() != 0 {
		t.Fatalf("err %v, stderr %q", err, errb.String())
	}
	if _, err := plan.Parse(out.Bytes()); err != nil {
		t.Fatalf("the plan printed does not validate: %v\n%s", err, out.String())
	}

	dir := t.TempDir()
	f := filepath.Join(dir, "c.txt")
	if err := os.WriteFile(f, []byte("curl -F a=b http://a.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = importMain(nil, &out, &errb, "detect", f, importer.Options{})
	var ec exitCode
	if !errors.As(err, &ec) || ec != exitImportSkipped {
		t.Fatalf("err %v, want exit status 4", err)
	}
	if !strings.Contains(errb.String(), "skipped: command 1 -F a=b: ") {
		t.Errorf("stderr %q", errb.String())
	}
	var p map[string]any
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Errorf("stdout is not the plan: %v", err)
	}

	// Notes alone (an operation that needs credentials, imported all the same) exit 0.
	out.Reset()
	errb.Reset()
	oas := `{"openapi":"3.0.3","servers":[{"url":"http://a.test"}],"paths":{"/x":{"get":{"security":[{"k":[]}]}}},"components":{"securitySchemes":{"k":{"type":"apiKey","in":"header","name":"X-Key"}}}}`
	err = importMain(strings.NewReader(oas), &out, &errb, "openapi", "-", importer.Options{})
	if err != nil || !strings.HasPrefix(errb.String(), "note: GET /x: needs credentials") || strings.Contains(errb.String(), "not imported") {
		t.Errorf("notes only: err %v, stderr %q; want exit 0 and a note line", err, errb.String())
	}

	for _, c := range []struct{ format, file, in string }{
		{"curl", filepath.Join(dir, "missing"), ""},
		{"har", "-", "{not json"},
		{"nope", "-", "curl http://a.test/"},
	} {
		errb.Reset()
		err := importMain(strings.NewReader(c.in), &out, &errb, c.format, c.file, importer.Options{})
		if !errors.As(err, &ec) || ec != exitImportUnreadable || !strings.HasPrefix(errb.String(), "volley import: ") {
			t.Errorf("%s %s: err %v, stderr %q; want exit status 2", c.format, c.file, err, errb.String())
		}
	}
}
