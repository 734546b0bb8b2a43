package plan

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WebSocket steps (issue 13). A request whose url is ws:// or wss:// is a WebSocket step: each
// iteration that runs it opens a session (the handshake counts as the step's one request, status
// 101), sends and awaits the messages of its ws object in order, holds the connection, and closes
// it. The ws object may be left out: the session then only connects and closes.
//
//	{"url": "ws://127.0.0.1:8080/echo", "headers": {"Cookie": "sid=1"},
//	 "ws": {"subprotocols": ["chat"],
//	        "messages": [{"send": "hello {{vu}}", "expect": [{"type": "body", "op": "contains", "value": "hello"}], "timeout": "5s"}],
//	        "hold": "10s", "close": true, "max_message": 65536}}

// Bounds and defaults of a WebSocket step.
const (
	// MaxWSMessages bounds the messages of one step.
	MaxWSMessages = 100
	// MaxWSSend bounds one message's send text (before its variables are filled).
	MaxWSSend = 64 << 10
	// DefaultWSMaxMessage is the largest received message read when ws.max_message is left out;
	// ws.max_message may be MinWSMaxMessage–MaxWSMaxMessage bytes.
	DefaultWSMaxMessage = 64 << 10
	MinWSMaxMessage     = 1 << 10
	MaxWSMaxMessage     = 16 << 20
	// MaxWSSubprotocols bounds ws.subprotocols.
	MaxWSSubprotocols = 20
)

// WS is the ws object of a WebSocket step.
type WS struct {
	// Subprotocols are offered in Sec-WebSocket-Protocol; a server choosing another one fails the
	// handshake (ws_handshake).
	Subprotocols []string    `json:"subprotocols,omitempty"`
	Messages     []WSMessage `json:"messages,omitempty"`
	// Hold keeps the session open after the messages for this long (reading and counting what the
	// server sends meanwhile); 0: none. It ends early at the run's scheduled end.
	Hold Duration `json:"hold,omitempty"`
	// Close ends the session with a close frame (status 1000) and waits briefly for the server's
	// (the default, true); false drops the TCP connection without one.
	Close *bool `json:"close,omitempty"`
	// MaxMessage is the largest received message, in bytes (0: DefaultWSMaxMessage); a larger
	// one fails the session (body_too_large).
	MaxMessage int `json:"max_message,omitempty"`
}

// WSMessage is one step of a session: send a text message (Send, templated like a request body),
// then, when Expect is given, wait up to Timeout (default: http.timeout) for a received message
// that passes every check of Expect: body (contains, not_contains), json (any op) or latency (the
// round trip: lt, le). Messages that do not pass are counted and skipped. When the timeout passes
// the session fails: check_failed when messages came but none passed, timeout when none came.
type WSMessage struct {
	Send    string   `json:"send,omitempty"`
	Expect  []Check  `json:"expect,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// IsWebSocketURL reports whether a request URL makes the request a WebSocket step.
func IsWebSocketURL(raw string) bool {
	return hasPrefixFold(raw, "ws://") || hasPrefixFold(raw, "wss://")
}

// IsWebSocket reports whether the request is a WebSocket step.
func (r *Request) IsWebSocket() bool { return IsWebSocketURL(r.URL) }

// CloseOn reports whether the session ends with a close frame (the default).
func (w *WS) CloseOn() bool { return w == nil || w.Close == nil || *w.Close }

// MaxMessageOrDefault is MaxMessage, or DefaultWSMaxMessage.
func (w *WS) MaxMessageOrDefault() int {
	if w != nil && w.MaxMessage > 0 {
		return w.MaxMessage
	}
	return DefaultWSMaxMessage
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// wsCheckTypes are the check types a message expectation may use.
var wsCheckTypes = map[string]bool{"body": true, "json": true, "latency": true}

// checkWSURL checks a ws:// or wss:// URL as parseURL checks http ones.
func checkWSURL(raw string) string {
	i := strings.Index(raw, "://")
	if _, err := parseURL("http" + raw[i-1:]); err != nil { // ws → http, wss → https
		return strings.ReplaceAll(strings.ReplaceAll(err.Error(), "https://", "wss://"), "http://", "ws://")
	}
	return ""
}

// validateWS checks request r (field prefix f, "requests[0].") as a WebSocket step, or that an
// HTTP request has no ws object.
func validateWS(f string, r *Request, v *ValidationError) {
	if !r.IsWebSocket() {
		if r.WS != nil {
			v.add(f+"ws", "only a request whose url is ws:// or wss:// is a WebSocket step")
		}
		return
	}
	if r.Method != "GET" {
		v.add(f+"method", "a WebSocket step opens with GET")
	}
	if r.Body != "" {
		v.add(f+"body", "a WebSocket step has no body: put what to send in ws.messages")
	}
	if len(r.Checks) > 0 {
		v.add(f+"checks", "a WebSocket step checks its messages: put the checks in ws.messages[].expect")
	}
	if len(r.Extract) > 0 {
		v.add(f+"extract", "is not available on a WebSocket step")
	}
	for k := range r.Headers {
		switch strings.ToLower(k) {
		case "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol":
			v.add(f+"headers", fmt.Sprintf("%q is set by the WebSocket handshake itself (use ws.subprotocols for the protocol)", k))
		}
	}
	w := r.WS
	if w == nil {
		return
	}
	f += "ws."
	if len(w.Subprotocols) > MaxWSSubprotocols {
		v.add(f+"subprotocols", fmt.Sprintf("has %d; at most %d", len(w.Subprotocols), MaxWSSubprotocols))
	}
	for i, p := range w.Subprotocols {
		if p == "" || len(p) > MaxHeaderNameBytes || strings.ContainsAny(p, " \t\r\n,;\"()/:<=>?@[\\]{}") {
			v.add(f+"subprotocols["+strconv.Itoa(i)+"]", fmt.Sprintf("%q is not a protocol token", clip(p)))
		}
	}
	if len(w.Messages) > MaxWSMessages {
		v.add(f+"messages", fmt.Sprintf("has %d messages; at most %d", len(w.Messages), MaxWSMessages))
	}
	for i, m := range w.Messages {
		if i >= MaxWSMessages {
			break
		}
		mf := f + "messages[" + strconv.Itoa(i) + "]."
		if m.Send == "" && len(m.Expect) == 0 {
			v.add(mf+"send", "a message sends text, expects one, or both")
		}
		if len(m.Send) > MaxWSSend {
			v.add(mf+"send", fmt.Sprintf("is %d bytes; at most %d (64 KiB)", len(m.Send), MaxWSSend))
		}
		if len(m.Expect) > MaxChecks {
			v.add(mf+"expect", fmt.Sprintf("has %d checks; at most %d", len(m.Expect), MaxChecks))
		}
		for j, c := range m.Expect {
			cf := mf + "expect[" + strconv.Itoa(j) + "]"
			if !wsCheckTypes[c.Type] {
				v.add(cf+".type", fmt.Sprintf("%q cannot check a message (body, json, latency)", c.Type))
				continue
			}
			validateCheck(cf, c, v)
		}
		if m.Timeout < 0 || m.Timeout.D() > MaxTimeout {
			v.add(mf+"timeout", "must be from 1ms to 1h (leave it out for http.timeout)")
		}
	}
	if w.Hold < 0 || w.Hold.D() > MaxLength {
		v.add(f+"hold", "must be from 0 to 24h")
	}
	if m := w.MaxMessage; m != 0 && (m < MinWSMaxMessage || m > MaxWSMaxMessage) {
		v.add(f+"max_message", fmt.Sprintf("must be %d–%d bytes (default %d)", MinWSMaxMessage, MaxWSMaxMessage, DefaultWSMaxMessage))
	}
}

// wsTemplates returns the message texts of a step, in order, as {field, text} pairs (field
// "ws.messages[0].send"), for the checks of their {{variables}} (validateScenario, SecretRefs).
func wsTemplates(r *Request) [][2]string {
	if r.WS == nil {
		return nil
	}
	out := make([][2]string, 0, len(r.WS.Messages))
	for i, m := range r.WS.Messages {
		if i < MaxWSMessages {
			out = append(out, [2]string{"ws.messages[" + strconv.Itoa(i) + "].send", m.Send})
		}
	}
	return out
}

// CompiledWS is a WebSocket step compiled: the URL with ws/wss for the handshake and each message's
// text template and checks.
type CompiledWS struct {
	URL          string // the URL as written (the request's URL)
	Subprotocols []string
	Messages     []CompiledWSMessage
	Hold         time.Duration
	Close        bool
	MaxMessage   int
}

// CompiledWSMessage is one compiled message step; Timeout is 0 when the plan leaves it out (the
// engine uses http.timeout).
type CompiledWSMessage struct {
	Send    Template // nil when the text has no variables (use Text)
	Text    string
	Expect  []CompiledCheck
	Timeout time.Duration
}

// compileWS compiles request r's ws object (r is a WebSocket step).
func compileWS(r *Request, data, extract map[string]int) (*CompiledWS, error) {
	w := r.WS
	c := &CompiledWS{URL: r.URL, Close: w.CloseOn(), MaxMessage: w.MaxMessageOrDefault()}
	if w == nil {
		return c, nil
	}
	c.Subprotocols, c.Hold = w.Subprotocols, w.Hold.D()
	for _, m := range w.Messages {
		t, err := CompileTemplate(m.Send, data, extract)
		if err != nil {
			return nil, err
		}
		cm := CompiledWSMessage{Send: t, Text: m.Send, Timeout: m.Timeout.D()}
		for _, k := range m.Expect {
			cm.Expect = append(cm.Expect, compileCheck(k))
		}
		c.Messages = append(c.Messages, cm)
	}
	return c, nil
}

// wsHTTPScheme is the scheme of a ws URL's HTTP handshake: http for ws, https for wss.
func wsHTTPScheme(u *url.URL) string {
	if strings.EqualFold(u.Scheme, "wss") {
		return "https"
	}
	return "http"
}
