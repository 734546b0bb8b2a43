package localagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// A plan whose check results name long request names many times (100 requests of 1000-byte
// names × 50 checks: 5000 results, 10 MB as State.Checks plus Summary.Checks each naming its
// request) runs through the local agent to its summary, as on the engine directly: its final
// message fits the broker (bus.MaxPayload, 8 MiB). It was dropped as too large, and the run
// waited for it until its end and failed ("no agent finished").
func TestFinalOfManyChecksFitsTheBroker(t *testing.T) {
	tg, l := okTarget(t), startLocal(t)
	long := strings.Repeat("n", 990)
	checks := strings.TrimSuffix(strings.Repeat(`{"type":"status","op":"eq","value":200},`, 50), ",")
	var reqs []string
	for i := range 100 {
		reqs = append(reqs, fmt.Sprintf(`{"name":"%02d-%s","url":%q,"checks":[%s]}`, i%90, long, tg.URL, checks))
	}
	c := compiled(t, `{"name":"checks","flow":"sequence","requests":[`+strings.Join(reqs, ",")+`],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":1}}`)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := l.Run(ctx, 1, c, func(metrics.Sample) {})
	if err != nil || sum == nil {
		t.Fatalf("run: %+v %v", sum, err)
	}
	if sum.Requests != 100 || len(sum.Checks) != 5000 {
		t.Fatalf("%d requests, %d check results; want 100, 5000", sum.Requests, len(sum.Checks))
	}
	for i, ch := range sum.Checks {
		if want := fmt.Sprintf("%02d-%s", i/50%90, long); ch.Request != want || ch.Check != "status eq 200" || ch.Passes != 1 || ch.Fails != 0 {
			t.Fatalf("check %d: %.40q %q %d/%d", i, ch.Request, ch.Check, ch.Passes, ch.Fails)
		}
	}
	if b, err := json.Marshal(sum); err != nil || len(b) < 5000*1000 {
		t.Fatalf("summary %d bytes: %v", len(b), err) // the summary itself names them all
	}
}
