package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
)

// The live envelope is built around the runner's shared encoding of the sample; it must be the
// very bytes encoding the envelope with encoding/json would give (the browser and stored streams
// depend on one shape), including the HTML-safe escaping json.Marshal applies.
func TestSampleMessageIsTheEnvelopeEncoding(t *testing.T) {
	m := metrics.Sample{T: 1764460000000, ElapsedS: 2, IntervalS: 1, Requests: 7, Successes: 6, Errors: 1,
		StatusCodes: map[string]int64{"200": 6}, ErrorKinds: map[string]int64{"check_failed": 1},
		ByName: map[string]metrics.NameSample{"GET /a?x=1&y=<2>": {Requests: 7, Errors: 1}}, Hist: "SGlzdA=="}
	data, err := runner.NewSample(m).JSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := sampleMessage(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(liveMessage{Type: "sample", Data: data})
	if string(got) != string(want) {
		t.Fatalf("sampleMessage:\n got %s\nwant %s", got, want)
	}
	var back struct {
		Type string         `json:"type"`
		Data metrics.Sample `json:"data"`
	}
	if err := json.Unmarshal(got, &back); err != nil || back.Type != "sample" || back.Data.ElapsedS != 2 || back.Data.Hist != "" {
		t.Fatalf("decoded %+v, %v", back, err)
	}
}

// A storage fault reaching a handler is a 503 that says what is wrong, not an opaque 500.
func TestStorageFaultIsServiceUnavailable(t *testing.T) {
	err := fmt.Errorf("store: create plan: %w", sqlite3.Error{Code: sqlite3.ErrFull})
	e := toError(err)
	if e.Status != http.StatusServiceUnavailable || e.Code != "storage_unavailable" || e.Message != "the disk is full" {
		t.Errorf("toError(disk full) = %d %s %q", e.Status, e.Code, e.Message)
	}
	if e := toError(errors.New("something else")); e.Status != http.StatusInternalServerError {
		t.Errorf("toError(other) = %d", e.Status)
	}
}
