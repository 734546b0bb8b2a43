package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
)

// A beat of an agent the registry does not know asks that agent (and only it) to say hello again,
// at most once per helloAgainEvery of the registry's clock; a known agent's beats ask nothing; an
// agent can publish only its own hello-again subject; at most helloAgainMax ids are remembered.
func TestUnknownBeatAsksHelloAgain(t *testing.T) {
	e := newEnv(t)
	e.agent("known", 1, Ready{})
	pub, err := e.b.Controller("beats")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	watch, err := e.b.Controller("watch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)
	asked := make(chan string, 64)
	if _, err := watch.Subscribe(bus.HelloAgainSubject("*"), func(m *nats.Msg) { asked <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	// until returns the asks that came before the first ask for id (one publisher, one
	// subscriber: in order).
	until := func(id string) []string {
		t.Helper()
		var got []string
		for {
			select {
			case s := <-asked:
				if s == bus.HelloAgainSubject(id) {
					return got
				}
				got = append(got, s)
			case <-time.After(10 * time.Second):
				t.Fatalf("no ask for %s; before it %v", id, got)
			}
		}
	}
	// beats publishes a beat of each id, then one of a fresh id (asked once the others are
	// handled), and returns the asks before that one.
	n := 0
	beats := func(ids ...string) []string {
		t.Helper()
		n++
		fence := fmt.Sprintf("fence-%d", n)
		for _, id := range append(ids, fence) {
			if err := pub.Publish(bus.PresenceSubject(id), []byte(`{"state":"idle","cores":1}`)); err != nil {
				t.Fatal(err)
			}
		}
		return until(fence)
	}
	want := fmt.Sprint([]string{bus.HelloAgainSubject("gen-1")})
	if got := beats("gen-1", "gen-1", "known", "gen-1"); fmt.Sprint(got) != want {
		t.Fatalf("three beats of gen-1 and one of a known agent asked %v, want %s", got, want)
	}
	e.clk.Add(helloAgainEvery - time.Millisecond)
	if got := beats("gen-1"); len(got) != 0 {
		t.Fatalf("asked again within %v: %v", helloAgainEvery, got)
	}
	e.clk.Add(time.Millisecond)
	if got := beats("gen-1"); fmt.Sprint(got) != want {
		t.Fatalf("after %v asked %v, want %s", helloAgainEvery, got, want)
	}

	// An agent may follow its own hello-again subject and publish only its own.
	a, err := e.b.LocalAgent("gen-2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	a.SetErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}) // the refused publish, expected
	own, err := a.SubscribeSync(bus.HelloAgainSubject("gen-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = a.Publish(bus.HelloAgainSubject("known"), nil)
	_ = a.Publish(bus.HelloAgainSubject("gen-2"), nil)
	if got := until("gen-2"); len(got) != 0 {
		t.Fatalf("agent gen-2 poked %v", got)
	}
	if _, err := own.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("gen-2 did not get its own hello-again: %v", err)
	}

	// Bounded: with helloAgainMax ids asked within helloAgainEvery, a new id waits; past it, the
	// old ones are forgotten and the new one is asked.
	remembered := func(id string) (bool, int) {
		e.reg.ask.mu.Lock()
		defer e.reg.ask.mu.Unlock()
		_, ok := e.reg.ask.asked[id]
		return ok, len(e.reg.ask.asked)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() { // the fills' asks, not followed
		for {
			select {
			case <-asked:
			case <-done:
				return
			}
		}
	}()
	for i := 0; ; i++ { // until one is refused (the aged asks above are swept on the way)
		id := fmt.Sprintf("fill-%d", i)
		e.reg.askHello(id)
		if ok, _ := remembered(id); !ok {
			break
		}
		if i > 2*helloAgainMax {
			t.Fatal("no bound on the remembered ids")
		}
	}
	e.reg.askHello("late")
	if ok, size := remembered("late"); ok || size != helloAgainMax {
		t.Fatalf("late asked with a full map: remembered %v, %d ids", ok, size)
	}
	e.clk.Add(helloAgainEvery)
	e.reg.askHello("late")
	if ok, size := remembered("late"); !ok || size != 1 {
		t.Fatalf("late not asked once the others aged: remembered %v, %d ids", ok, size)
	}
}
