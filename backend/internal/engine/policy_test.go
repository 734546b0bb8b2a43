package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func runWithPolicy(t *testing.T, p *plan.Plan, pol *netpolicy.Policy) *metrics.Summary {
	t.Helper()
	e, err := newEngine(p, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func iterationsPlan(url string, n int, extra string) string {
	return fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},
		"http":{"timeout":"2s"%s}}`, url, n, extra)
}

// A loopback target redirecting to the cloud metadata address, in several spellings: every hop
// to it is refused at dial time (blocked_target), with the default policy.
func TestRedirectToDeniedAddressIsBlocked(t *testing.T) {
	for _, loc := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/",
		"http://0xA9FEA9FE/",
		"http://%31%36%39.254.169.254/",
		"http://169.254.169.254./",
		"http://[::ffff:a9fe:a9fe]:8080/",
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://0.0.0.0:1/",
	} {
		t.Run(loc, func(t *testing.T) {
			tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, loc, http.StatusFound)
			})
			sum := runWithPolicy(t, mustPlan(t, iterationsPlan(tg.URL+"/", 5, `,"follow_redirects":true`)), nil)
			if sum.Requests != 5 || sum.ErrorKinds["blocked_target"] != 5 || tg.Requests() != 5 {
				t.Errorf("requests %d kinds %v target saw %d (want 5 blocked after 5 first hops)", sum.Requests, sum.ErrorKinds, tg.Requests())
			}
		})
	}
}

// An administrator's denial of a loopback address holds for redirects: the denied listener never
// sees a connection, the allowed one serves every first hop.
func TestRedirectToAdminDeniedLoopbackNeverConnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip("127.0.0.2 not available:", err)
	}
	var deniedConns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			deniedConns.Add(1)
			c.Close()
		}
	}()
	defer ln.Close()
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+ln.Addr().String()+"/", http.StatusFound)
	})
	pol, err := netpolicy.New(nil, []string{"127.0.0.2/32"})
	if err != nil {
		t.Fatal(err)
	}
	sum := runWithPolicy(t, mustPlan(t, iterationsPlan(tg.URL+"/", 5, `,"follow_redirects":true`)), pol)
	if sum.ErrorKinds["blocked_target"] != 5 || tg.Requests() != 5 || deniedConns.Load() != 0 {
		t.Errorf("kinds %v, first hops %d, connections to the denied address %d", sum.ErrorKinds, tg.Requests(), deniedConns.Load())
	}
	// the same plan without the denial reaches it (the test can fail)
	sum = runWithPolicy(t, mustPlan(t, iterationsPlan(tg.URL+"/", 5, `,"follow_redirects":true`)), nil)
	if sum.ErrorKinds["blocked_target"] != 0 || deniedConns.Load() == 0 {
		t.Errorf("without the rule: kinds %v, connections %d", sum.ErrorKinds, deniedConns.Load())
	}
}

// An http.hosts override to a denied address is refused at dial time too (the API and `volley
// run` refuse it earlier, at validation: plan.CheckTargets), and a URL literal as well.
func TestDeniedTargetsAtDialTime(t *testing.T) {
	for _, js := range []string{
		iterationsPlan("http://svc.test/", 3, `,"hosts":{"svc.test":"169.254.169.254"}`),
		iterationsPlan("http://svc.test:8080/", 3, `,"hosts":{"svc.test":"[fe80::1]:80"}`),
		iterationsPlan("http://169.254.169.254/", 3, ""),
		iterationsPlan("http://[ff02::1]:8080/", 3, ""),
	} {
		sum := runWithPolicy(t, mustPlan(t, js), nil)
		if sum.Requests != 3 || sum.ErrorKinds["blocked_target"] != 3 {
			t.Errorf("%s: requests %d kinds %v", js, sum.Requests, sum.ErrorKinds)
		}
	}
}
