package runs

import (
	"errors"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The error stored with an ended run says why it had no successful response — but a run stopped
// before any request (outcome "stopped") failed at nothing: it has none.
func TestEndMessageOfARunStoppedBeforeAnyRequest(t *testing.T) {
	none := &metrics.Summary{}
	for _, c := range []struct {
		status string
		sum    *metrics.Summary
		err    error
		want   string
	}{
		{"stopped", none, nil, ""},
		{"finished", none, nil, "no successful response: no request was sent"},
		{"stopped", &metrics.Summary{Requests: 3, Errors: 3, ErrorRate: 1}, nil, "no successful response: 3 requests failed"},
		{"stopped", none, errors.New("boom"), "boom"},
		{"finished", &metrics.Summary{Requests: 3, Successes: 3}, nil, ""},
	} {
		if got := endMessage(c.status, c.sum, c.err); got != c.want {
			t.Errorf("endMessage(%s, %+v, %v) = %q, want %q", c.status, c.sum, c.err, got, c.want)
		}
	}
}
