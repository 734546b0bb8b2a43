package runs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/volley-load/volley/backend/internal/store"
)

// A downsampled run keeps every second holding a load change (live control), in time order.
func TestDownsamplingKeepsTheSecondsOfLoadChanges(t *testing.T) {
	smps := make([]store.Sample, 1000)
	for i := range smps {
		ev := ""
		if i == 500 || i == 501 {
			ev = fmt.Sprintf(`,"events":[{"t":%d,"kind":"vus","from":1,"to":2}]`, i)
		}
		smps[i] = store.Sample{Second: i + 1, Data: []byte(fmt.Sprintf(`{"rps":100,"latency_ms":{"p95":5}%s}`, ev))}
	}
	idx, down, err := pick(smps, 50)
	if err != nil || !down {
		t.Fatal(err, down)
	}
	if !slices.Contains(idx, 500) || !slices.Contains(idx, 501) || !slices.IsSorted(idx) || len(idx) > 52 {
		t.Errorf("picked %d seconds %v: want ≤ 50 by LTTB plus seconds 501 and 502, ascending", len(idx), idx)
	}
	if len(slices.Compact(slices.Clone(idx))) != len(idx) {
		t.Errorf("a second picked twice: %v", idx)
	}
}
