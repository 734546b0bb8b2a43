package engine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
)

// malformedError marks an answer that is not HTTP/1.x the engine can parse (error kind
// malformed_response; httpConn.responseError).
type malformedError struct{ err error }

func (e *malformedError) Error() string { return "malformed response: " + e.err.Error() }
func (e *malformedError) Unwrap() error { return e.err }

// classify maps a transport error to its error kind. Status codes and checks are judged elsewhere.
func classify(err error) metrics.ErrorKind {
	if err == nil {
		return metrics.KindNone
	}
	var malformed *malformedError
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &malformed):
		return metrics.MalformedResponse
	case errors.As(err, &small) || errors.Is(err, errHeaderTooLarge):
		return metrics.HeaderTooLarge // fasthttp: the header outgrew the read buffer; or headerFits
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return metrics.BodyTooLarge
	}
	dial := isDialError(err)
	var denied *netpolicy.Denied
	switch {
	case errors.As(err, &denied):
		return metrics.BlockedTarget
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return metrics.TooManyOpenFiles
	case errors.Is(err, syscall.ECONNREFUSED):
		return metrics.ConnectRefused
	case errors.Is(err, fasthttp.ErrDialTimeout):
		return metrics.ConnectTimeout
	case errors.Is(err, fasthttp.ErrTooManyRedirects):
		return metrics.RedirectLoop
	case errors.Is(err, fasthttp.ErrTLSHandshakeTimeout):
		return metrics.TLS
	}
	if isTimeout(err) {
		if dial {
			return metrics.ConnectTimeout
		}
		return metrics.Timeout
	}
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	if errors.As(err, &recErr) || errors.As(err, &alert) || errors.As(err, &certErr) ||
		errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &certInvalid) {
		return metrics.TLS
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return metrics.Reset
	case dial:
		return metrics.Other // e.g. no route, DNS failure
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return metrics.Read
	}
	if k := classifyH2(err); k != metrics.KindNone {
		return k
	}
	var op *net.OpError
	if errors.As(err, &op) {
		switch op.Op {
		case "read":
			return metrics.Read
		case "write":
			return metrics.Write
		}
	}
	return metrics.Other
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
