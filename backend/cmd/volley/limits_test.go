package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// volley run refuses a plan beyond its caps before any load, naming the field and the flag.
func TestRunRefusesAPlanBeyondItsCaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.json")
	js := `{"name":"c","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":20,"duration":"1s"}}`
	if err := os.WriteFile(path, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := runLimits
	defer func() { runLimits = saved }()
	for _, c := range []struct {
		limits capFlags
		want   string
	}{
		{capFlags{maxVUs: 10, memoryBudget: "0"}, "load.vus: asks for up to 20 VUs; this server allows at most 10 (--max-vus)"},
		{capFlags{maxDuration: 500e6, memoryBudget: "0"}, "(--max-duration)"},
		{capFlags{memoryBudget: "1MiB"}, "over this server's memory budget of 1 MiB (--memory-budget)"},
		{capFlags{memoryBudget: "lots"}, `--memory-budget "lots" is not a size`},
	} {
		runLimits = c.limits
		var stdout, stderr bytes.Buffer
		err := runPlan(&stdout, &stderr, path, "", true)
		var code exitCode
		if !errors.As(err, &code) || code != exitInvalidPlan || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%+v: err %v, stderr %q", c.limits, err, stderr.String())
		}
	}
}

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512MiB": 512 << 20, "2GiB": 2 << 30, "2G": 2 << 30, "1.5GiB": 3 << 29, "1048576": 1 << 20} {
		if got, err := parseBudget(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	if got, err := parseBudget("auto"); err != nil || got < 64<<20 {
		t.Errorf("auto: %d %v", got, err)
	}
	for _, bad := range []string{"-1", "2XB", "GiB", "1e99GiB"} {
		if _, err := parseBudget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
