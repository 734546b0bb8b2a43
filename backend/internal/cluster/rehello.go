package cluster

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
)

// Asking agents to say hello again: at most one ask per agent id per helloAgainEvery (by the
// registry's clock), remembering at most helloAgainMax ids (past it, asks wait until remembered
// ones are older than helloAgainEvery).
const (
	helloAgainEvery = 2 * time.Second
	helloAgainMax   = 4096
)

// helloAsker remembers when each agent was last asked to say hello again.
type helloAsker struct {
	conn *nats.Conn

	mu    sync.Mutex
	asked map[string]time.Time
}

// askHello asks agent id to say hello again on bus.HelloAgainSubject, rate-limited per id: its
// presence beat came, but the registry does not know it (an agent that stayed connected to an
// external NATS while the controller restarted says hello only when asked). Only id's own
// connection can publish id's presence subject (bus.SubjectsFor), so a beat cannot make the
// registry poke another agent.
func (r *Registry) askHello(id string) {
	if !bus.ValidAgentID(id) {
		return
	}
	now, k := r.now(), &r.ask
	k.mu.Lock()
	if k.asked == nil {
		k.asked = map[string]time.Time{}
	}
	if t, ok := k.asked[id]; ok && now.Sub(t) < helloAgainEvery && !now.Before(t) {
		k.mu.Unlock()
		return
	}
	if len(k.asked) >= helloAgainMax {
		for old, t := range k.asked {
			if now.Sub(t) >= helloAgainEvery {
				delete(k.asked, old)
			}
		}
	}
	if len(k.asked) >= helloAgainMax {
		k.mu.Unlock()
		return
	}
	k.asked[id] = now
	k.mu.Unlock()
	_ = k.conn.Publish(bus.HelloAgainSubject(id), nil) // a lost ask is repeated on a later beat
}
