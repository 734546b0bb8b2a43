package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// A storage fault reaching a handler is a 503 that says what is wrong, not an opaque 500.
func TestStorageFaultIsServiceUnavailable(t *testing.T) {
	err := fmt.Errorf("store: create plan: %w", sqlite3.Error{Code: sqlite3.ErrFull})
	e := toError(err)
	if e.Status != http.StatusServiceUnavailable || e.Code != "storage_unavailable" || e.Message != "the disk is full" {
		t.Errorf("toError(disk full) = %d %s %q", e.Status, e.Code, e.Message)
	}
	if e := toError(errors.New("something else")); e.Status != http.StatusInternalServerError {
		t.Errorf("toError(other) = %d", e.Status)
	}
}
