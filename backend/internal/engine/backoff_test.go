package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// A closed-model VU against a dead port backs off (1, 2, 4 … 64 ms, then 100 ms between
// attempts) instead of dialling thousands of times a second; every attempt is still counted as
// connect_refused. The bound is a ceiling whatever the machine's load: sleeps only make a VU
// slower, so 1 s allows at most 8 + (1000 − 127) / 100 ≈ 17 attempts per VU.
func TestClosedModelBacksOffARefusedConnection(t *testing.T) {
	addr := testutil.ClosedPort(t)
	const vus = 2
	sum, _ := run(t, mustPlan(t, constantVUs("http://"+addr+"/", vus, "1s")))
	perVU := float64(sum.Requests) / vus / sum.DurationS
	t.Logf("%d refused connections in %.2f s: %.0f dials/s per VU", sum.Requests, sum.DurationS, perVU)
	if sum.ErrorKinds["connect_refused"] != sum.Requests || sum.Requests < vus*5 {
		t.Errorf("requests %d, kinds %v: every attempt is counted, and the VUs keep trying", sum.Requests, sum.ErrorKinds)
	}
	if sum.Requests > vus*20 {
		t.Errorf("%d attempts by %d VUs in 1 s: no backoff (at most ~17 per VU)", sum.Requests, vus)
	}
}

// An open model is not paused: its arrivals are scheduled, and a refused one frees its VU at once
// for the next. Two VUs at 200/s would send at most ~35 requests in 1 s if they backed off.
func TestOpenModelDoesNotBackOff(t *testing.T) {
	addr := testutil.ClosedPort(t)
	sum, _ := run(t, mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":200,"duration":"1s","pre_allocated_vus":2,"max_vus":2},"http":{"timeout":"2s"}}`, "http://"+addr+"/")))
	t.Logf("%d refused, %d dropped", sum.Requests, sum.DroppedIterations)
	if sum.ErrorKinds["connect_refused"] != sum.Requests || sum.Requests < 100 {
		t.Errorf("open model: %d requests (%d dropped) of 200 scheduled, kinds %v", sum.Requests, sum.DroppedIterations, sum.ErrorKinds)
	}
}

// The pause grows 1, 2, 4 … ms with the failures in a row and stops at 100 ms.
func TestConnFailPauseIsBounded(t *testing.T) {
	var got []time.Duration
	for n := uint8(1); n <= 8; n++ {
		got = append(got, min(connFailPauseMin<<(n-1), connFailPauseMax))
	}
	want := fmt.Sprint([]time.Duration{1e6, 2e6, 4e6, 8e6, 16e6, 32e6, 64e6, 100e6})
	if fmt.Sprint(got) != want {
		t.Errorf("pauses %v, want %v", got, want)
	}
}
