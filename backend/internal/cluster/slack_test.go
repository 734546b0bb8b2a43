package cluster

import "testing"

// A part's histogram may hold a few more latencies than its requests (histSlack), the VUs among
// them; the VUs believed are at most the agent's share of the run's peak (10 VUs over two equal
// agents: 5 each), so an agent claiming an absurd active_vus is held to the honest bound
// (100 requests, 5 VUs: 100 + 5 + 25 + 64 = 194 latencies) — and a live change to more VUs
// raises the share (20 VUs: 10 each, 199).
func TestAbsurdActiveVUsBuyNoSlack(t *testing.T) {
	c := compile(t, `{"name":"s","requests":[{"name":"r","url":"http://127.0.0.1:1/"}],
		"load":{"executor":"constant-vus","vus":10,"duration":"10s"}}`)
	m := NewMerger(c, []string{"a", "b"}, []int{1, 1})
	lying := func(latencies int) *SecondPart {
		lat := make([]int64, latencies)
		for i := range lat {
			lat[i] = int64(100 + i)
		}
		p := part(t, 1, lat)
		p.Sample.Requests, p.Sample.Successes, p.Sample.ActiveVUs = 100, 100, 1<<40
		return p
	}
	if err := m.CheckPart(1, lying(194)); err != nil {
		t.Errorf("194 latencies of 100 requests (the honest bound of 5 VUs): %v", err)
	}
	if err := m.CheckPart(1, lying(195)); err == nil {
		t.Error("195 latencies of 100 requests with active_vus 2⁴⁰: accepted, want refused (5 VUs' bound 194)")
	}
	m.RaiseVUs(20)
	m.RaiseVUs(12) // a later, lower change lowers nothing: the run may still hold the 20's agents' seconds
	if err := m.CheckPart(1, lying(199)); err != nil {
		t.Errorf("199 latencies of 100 requests after a change to 20 VUs (10 each): %v", err)
	}
	if err := m.CheckPart(1, lying(200)); err == nil {
		t.Error("200 latencies after a change to 20 VUs: accepted, want refused (10 VUs' bound 199)")
	}
}
