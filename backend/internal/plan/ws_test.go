package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func wsPlanJSON(req string) string {
	return `{"name":"ws","requests":[` + req + `],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`
}

// A WebSocket step parses, round-trips and compiles: the handshake's scheme, templates, checks,
// defaults (close on, max_message 64 KiB, message timeout left to http.timeout).
func TestWSStepParsesAndCompiles(t *testing.T) {
	js := wsPlanJSON(`{"url":"wss://example.test/chat?room=1","headers":{"Cookie":"sid=1"},
		"ws":{"subprotocols":["chat.v1"],"messages":[{"send":"hi {{vu}}","expect":[{"type":"json","path":"ok","op":"eq","value":true}],"timeout":"2s"},
		{"expect":[{"type":"body","op":"contains","value":"bye"},{"type":"latency","op":"lt","value":"1s"}]}],"hold":"5s"}}`)
	p, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	if q, err := Parse(b); err != nil || q.Requests[0].WS == nil || len(q.Requests[0].WS.Messages) != 2 {
		t.Fatalf("round trip: %v (%s)", err, b)
	}
	c, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Requests[0]
	w := cr.WS
	if cr.Scheme != "https" || cr.HostPort != "example.test" || w == nil {
		t.Fatalf("compiled %+v", cr)
	}
	if !w.Close || w.MaxMessage != DefaultWSMaxMessage || w.Hold != 5*time.Second || len(w.Messages) != 2 {
		t.Errorf("ws %+v", w)
	}
	if w.Messages[0].Send == nil || w.Messages[0].Timeout != 2*time.Second || len(w.Messages[0].Expect) != 1 {
		t.Errorf("message 0 %+v", w.Messages[0])
	}
	if w.Messages[1].Send != nil || w.Messages[1].Timeout != 0 || len(w.Messages[1].Expect) != 2 {
		t.Errorf("message 1 %+v", w.Messages[1])
	}
}

// Every problem of a WebSocket step is named by its field path.
func TestWSStepValidation(t *testing.T) {
	long := strings.Repeat("x", MaxWSSend+1)
	many := strings.Repeat(`{"send":"x"},`, MaxWSMessages) + `{"send":"x"}`
	for _, tc := range []struct{ req, field string }{
		{`{"url":"http://h/","ws":{}}`, "requests[0].ws"},
		{`{"url":"ws://","ws":{}}`, "requests[0].url"},
		{`{"url":"ws://h/","method":"POST"}`, "requests[0].method"},
		{`{"url":"ws://h/","body":"x"}`, "requests[0].body"},
		{`{"url":"ws://h/","checks":[{"type":"status","op":"eq","value":101}]}`, "requests[0].checks"},
		{`{"url":"ws://h/","extract":[{"var":"a","from":"json","path":"a"}]}`, "requests[0].extract"},
		{`{"url":"ws://h/","headers":{"sec-websocket-protocol":"x"}}`, "requests[0].headers"},
		{`{"url":"ws://h/","ws":{"subprotocols":["a b"]}}`, "requests[0].ws.subprotocols[0]"},
		{`{"url":"ws://h/","ws":{"messages":[{}]}}`, "requests[0].ws.messages[0].send"},
		{`{"url":"ws://h/","ws":{"messages":[{"send":"` + long + `"}]}}`, "requests[0].ws.messages[0].send"},
		{`{"url":"ws://h/","ws":{"messages":[` + many + `]}}`, "requests[0].ws.messages"},
		{`{"url":"ws://h/","ws":{"messages":[{"send":"{{nope}}"}]}}`, "requests[0].ws.messages[0].send"},
		{`{"url":"ws://h/","ws":{"messages":[{"expect":[{"type":"status","op":"eq","value":1}]}]}}`, "requests[0].ws.messages[0].expect[0].type"},
		{`{"url":"ws://h/","ws":{"messages":[{"expect":[{"type":"body","op":"eq","value":"x"}]}]}}`, "requests[0].ws.messages[0].expect[0].op"},
		{`{"url":"ws://h/","ws":{"messages":[{"send":"x","timeout":"2h"}]}}`, "requests[0].ws.messages[0].timeout"},
		{`{"url":"ws://h/","ws":{"hold":"25h"}}`, "requests[0].ws.hold"},
		{`{"url":"ws://h/","ws":{"max_message":10}}`, "requests[0].ws.max_message"},
		{`{"url":"ws://h/","ws":{"max_message":20000000}}`, "requests[0].ws.max_message"},
		{`{"url":"ws://h/","ws":{"bogus":1}}`, "requests[0].ws.bogus"},
	} {
		_, err := Parse([]byte(wsPlanJSON(tc.req)))
		v, ok := err.(*ValidationError)
		if !ok {
			t.Errorf("%s: want a validation error naming %s, got %v", clip(tc.req), tc.field, err)
			continue
		}
		if _, ok := v.Fields[tc.field]; !ok {
			t.Errorf("%s: problems %v do not name %s", clip(tc.req), v.Fields, tc.field)
		}
	}
}

// A {{secret.NAME}} in a message is a secret reference of its field.
func TestWSSecretRefs(t *testing.T) {
	p, err := Parse([]byte(wsPlanJSON(`{"url":"ws://h/","ws":{"messages":[{"send":"auth {{secret.TOKEN}}"}]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	refs := p.SecretRefs()
	if len(refs) != 1 || refs[0].Field != "requests[0].ws.messages[0].send" || refs[0].Name != "TOKEN" {
		t.Errorf("refs %+v", refs)
	}
}
