package api

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// RequestIDHeader names the request id on every answer: the caller's own when it is sane
// (validRequestID), else a new one. Error bodies repeat it as error.request_id, and the server log
// line of a 5xx carries it as request_id, so a user's report finds the log line.
const RequestIDHeader = "X-Request-Id"

// maxRequestID bounds an incoming request id (bytes).
const maxRequestID = 64

// validRequestID reports whether a caller's request id may be used as is: 1–64 bytes of
// A–Z a–z 0–9 and - _ . : (nothing a log line or header could be forged with).
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// newRequestID is 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

// requestID returns the request id of the answer being written to w, setting it first when the
// answer has none: the caller's X-Request-Id when validRequestID accepts it, else a new one.
// It is idempotent, so the outermost wrapper (withRequestID) and the router both call it.
func requestID(w http.ResponseWriter, r *http.Request) string {
	if id := w.Header().Get(RequestIDHeader); id != "" {
		return id
	}
	id := r.Header.Get(RequestIDHeader)
	if !validRequestID(id) {
		id = newRequestID()
	}
	w.Header().Set(RequestIDHeader, id)
	return id
}

// withRequestID gives every answer of h a request id (requestID) before h runs.
func withRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestID(w, r)
		h.ServeHTTP(w, r)
	})
}
