package runs

import (
	"encoding/json"
	"testing"
)

// FuzzLiveMessages: the live stream's messages are built from stored bytes (a sample's JSON, a
// run's summary); whatever those bytes are, every message sent is valid JSON of the documented
// shape, and a valid sample comes through unchanged.
func FuzzLiveMessages(f *testing.F) {
	for _, s := range []string{`{"t":1,"elapsed_s":1,"requests":5}`, `null`, ``, `{`, `"x"`, `[1,2]`, `{"a":` + "\"\xff\"" + `}`, "{}garbage"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		sum := summaryMessage(data, Run{ID: 1, Status: "finished"})
		if err := json.Unmarshal(sum, &m); err != nil || m.Type != "summary" {
			t.Fatalf("summary message %q: %v", sum, err)
		}
		if !json.Valid(data) {
			return // a sample is always the runner's own json.Marshal output
		}
		msg, err := sampleMessage(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(msg, &m); err != nil || m.Type != "sample" {
			t.Fatalf("sample message %q: %v", msg, err)
		}
	})
}
