package metrics

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Outcomes of an ended run: how it went, as the screens, the CLI and the exports say it. A run's
// status (finished, stopped, failed, interrupted) says how it ended; its outcome says whether
// the target answered (or, OutcomeStopped, that it was never asked).
const (
	// OutcomePassed: at least one successful response, an error rate of at most
	// MaxPassedErrorRate and no failed threshold.
	OutcomePassed = "passed"
	// OutcomeFinishedWithErrors: at least one successful response, but an error rate above
	// MaxPassedErrorRate or a failed threshold.
	OutcomeFinishedWithErrors = "finished_with_errors"
	// OutcomeFailed: no successful response at all (no request sent, or every request failed),
	// or the run itself failed or was interrupted (status failed or interrupted).
	OutcomeFailed = "failed"
	// OutcomeStopped: a run the user stopped (status stopped) before any request completed — e.g.
	// stopped before its start instant: nothing was tested, so nothing failed.
	OutcomeStopped = "stopped"
)

// MaxPassedErrorRate is the highest error rate (errors / requests, 0…1) of a passed run: 5 %.
const MaxPassedErrorRate = 0.05

// OutcomeOf is the outcome of a run from its stored figures: status is the run's status
// (finished, stopped, failed, interrupted; "running" or "" gives ""), requests its request
// count, errorRate its errors / requests (1 exactly when no request succeeded, as errors =
// requests − successes), thresholdsOK whether every threshold passed (nil: no thresholds).
// This is the only place the rule lives in Go; Summary.Outcome and the API apply it, and the
// runs.outcome column (migrations/00006, which History filters on) is the same CASE in SQL,
// checked against it by store's TestOutcomeColumnIsOutcomeOf.
func OutcomeOf(status string, requests int64, errorRate float64, thresholdsOK *bool) string {
	switch status {
	case "finished", "stopped":
	case "failed", "interrupted":
		return OutcomeFailed
	default: // running, or unknown
		return ""
	}
	switch {
	case requests <= 0 && status == "stopped":
		return OutcomeStopped
	case requests <= 0 || errorRate >= 1:
		return OutcomeFailed
	case errorRate > MaxPassedErrorRate || (thresholdsOK != nil && !*thresholdsOK):
		return OutcomeFinishedWithErrors
	}
	return OutcomePassed
}

// Outcome is the outcome (OutcomeOf) of a run that ended with status and this summary.
func (s *Summary) Outcome(status string) string {
	var ok *bool
	if len(s.Thresholds) > 0 {
		v := s.ThresholdsOK()
		ok = &v
	}
	return OutcomeOf(status, s.Requests, s.ErrorRate, ok)
}

// EndMessage is the error of a run that ended with status and this summary without an error of
// its own: NoSuccessMessage, but "" for a run stopped before any request (OutcomeStopped: it
// failed at nothing).
func (s *Summary) EndMessage(status string) string {
	if s.Outcome(status) == OutcomeStopped {
		return ""
	}
	return s.NoSuccessMessage()
}

// NoSuccessMessage says why a run without a successful response has none, naming its most
// frequent error kind and count (e.g. "no successful response: 235356 connect_refused (of
// 235356 requests)"); "" when the run had a successful response.
func (s *Summary) NoSuccessMessage() string {
	if s.Successes > 0 {
		return ""
	}
	if s.Requests == 0 {
		return "no successful response: no request was sent"
	}
	kinds := slices.Sorted(maps.Keys(s.ErrorKinds))
	if len(kinds) == 0 {
		return fmt.Sprintf("no successful response: %d requests failed", s.Requests)
	}
	top := slices.MaxFunc(kinds, func(a, b string) int {
		// the most frequent; on a tie, the first in name order
		return cmp.Or(cmp.Compare(s.ErrorKinds[a], s.ErrorKinds[b]), cmp.Compare(b, a))
	})
	return fmt.Sprintf("no successful response: %d %s (of %d requests)", s.ErrorKinds[top], top, s.Requests)
}
