package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestImportSourceSlotWaitEndsWithClient: with both import slots taken, a client that gave up
// (its request context cancelled) does not wait for a slot: the handler returns its context's
// error at once and leaves the slots as they were.
func TestImportSourceSlotWaitEndsWithClient(t *testing.T) {
	for range cap(sourceImportSlots) {
		sourceImportSlots <- struct{}{}
	}
	defer func() {
		for range cap(sourceImportSlots) {
			<-sourceImportSlots
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/import", strings.NewReader(`{"input":"curl http://127.0.0.1:9/"}`))
	if _, _, err := (&Server{}).importSource(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(sourceImportSlots); n != cap(sourceImportSlots) {
		t.Errorf("%d slots held, want the %d taken here", n, cap(sourceImportSlots))
	}
}
