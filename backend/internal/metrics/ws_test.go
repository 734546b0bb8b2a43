package metrics

import "testing"

// Without EnableWS a reading has no ws block; with it, the shards' counters and histograms add up
// exactly, and a delta is the difference of two readings.
func TestWSCountsMergeShardsExactly(t *testing.T) {
	r := NewRecorder(3)
	c := NewCounts()
	r.Read(c)
	if c.WS.On || c.WS.Stats(1, NewHist(), NewHist()) != nil || r.WS(0) != nil {
		t.Fatal("a recorder without WebSocket steps reports a ws block")
	}
	r.EnableWS()
	r.EnableWS() // once
	for i := range 6 {
		w := r.WS(i)
		w.Sent()
		w.Received()
		w.RoundTrip(int64(1000 * (i + 1)))
		w.Session(i%2 == 0)
	}
	r.WS(1).Connected(500)
	prev, cur, d := NewCounts(), NewCounts(), NewCounts()
	r.Read(prev)
	r.WS(2).Sent()
	r.WS(2).RoundTrip(7000)
	r.Read(cur)
	d.Sub(cur, prev)
	s := prev.WS.Stats(2, NewHist(), NewHist())
	if s.Sessions != 6 || s.SessionsFailed != 3 || s.MessagesSent != 6 || s.MessagesReceived != 6 || s.MessagesSentRate != 3 {
		t.Errorf("totals %+v", *s)
	}
	// within the histograms' resolution (3 significant digits); the mean is exact (µs sums)
	near := func(got, want float64) bool { return got >= want && got <= want*1.001 }
	if !near(s.RoundTrip.Min, 1) || !near(s.RoundTrip.Max, 6) || s.RoundTrip.Mean != 3.5 || !near(s.Connect.Max, 0.5) {
		t.Errorf("latencies: round trip %+v connect %+v", s.RoundTrip, s.Connect)
	}
	ds := d.WS.Stats(1, NewHist(), NewHist())
	if ds.MessagesSent != 1 || ds.Sessions != 0 || !near(ds.RoundTrip.Min, 7) || !near(ds.RoundTrip.Max, 7) || ds.RoundTrip.Mean != 7 {
		t.Errorf("delta %+v", *ds)
	}
}
