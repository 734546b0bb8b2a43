package metrics

import "testing"

func TestOutcomeRule(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		status    string
		requests  int64
		errorRate float64
		ok        *bool
		want      string
	}{
		{"running", 100, 0, nil, ""},
		{"finished", 100, 0, nil, OutcomePassed},
		{"stopped", 100, 0.05, &yes, OutcomePassed}, // the level itself passes
		{"finished", 100, 0.06, nil, OutcomeFinishedWithErrors},
		{"finished", 100, 0, &no, OutcomeFinishedWithErrors},
		{"finished", 100, 0.99, nil, OutcomeFinishedWithErrors},
		{"finished", 100, 1, nil, OutcomeFailed}, // no successful response
		{"finished", 0, 0, nil, OutcomeFailed},   // no request at all
		{"stopped", 0, 0, nil, OutcomeStopped},   // stopped before any request: nothing failed
		{"stopped", 0, 1, &no, OutcomeStopped},
		{"failed", 0, 0, nil, OutcomeFailed},
		{"interrupted", 0, 0, nil, OutcomeFailed},
		{"stopped", 1, 1, nil, OutcomeFailed}, // stopped after a request that failed
		{"stopped", 235356, 1, &no, OutcomeFailed},
		{"failed", 100, 0, &yes, OutcomeFailed},
		{"interrupted", 100, 0, nil, OutcomeFailed},
	} {
		if got := OutcomeOf(c.status, c.requests, c.errorRate, c.ok); got != c.want {
			t.Errorf("OutcomeOf(%s, %d, %g, %v) = %q, want %q", c.status, c.requests, c.errorRate, c.ok, got, c.want)
		}
	}
}

func TestSummaryOutcomeAndMessage(t *testing.T) {
	s := Summary{Requests: 10, Errors: 10, ErrorRate: 1, ErrorKinds: map[string]int64{"connect_refused": 7, "timeout": 3}}
	if got := s.Outcome("finished"); got != OutcomeFailed {
		t.Errorf("outcome = %q, want failed", got)
	}
	if got, want := s.NoSuccessMessage(), "no successful response: 7 connect_refused (of 10 requests)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	s.ErrorKinds = map[string]int64{"timeout": 5, "reset": 5}
	if got, want := s.NoSuccessMessage(), "no successful response: 5 reset (of 10 requests)"; got != want {
		t.Errorf("tie: message = %q, want %q", got, want)
	}
	if got, want := (&Summary{}).NoSuccessMessage(), "no successful response: no request was sent"; got != want {
		t.Errorf("empty: message = %q, want %q", got, want)
	}
	s = Summary{Requests: 10, Successes: 9, Errors: 1, ErrorRate: 0.1, Thresholds: []ThresholdResult{{OK: true}}}
	if got := s.NoSuccessMessage(); got != "" {
		t.Errorf("a run with a success has message %q", got)
	}
	if got := s.Outcome("stopped"); got != OutcomeFinishedWithErrors {
		t.Errorf("outcome = %q, want finished_with_errors", got)
	}
}
