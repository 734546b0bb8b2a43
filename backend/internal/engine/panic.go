package engine

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// PanicError is a panic inside a run — in a VU, an executor, the collector or the wakeup
// goroutine. The engine recovers it at the top of that goroutine (once per goroutine: nothing is
// added per request), stops the run as if it were stopped, and Run returns the summary of what ran
// with this error, so the run ends as failed and the process goes on.
type PanicError struct {
	Where string // "VU 3", "collector", "executor", "wakeups"
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("internal error in %s: %v", e.Where, e.Value) }

// failure records the first panic of a run.
type failure struct {
	once sync.Once
	ch   chan struct{} // closed at the first panic
	err  *PanicError
}

// recoverIn is deferred at the top of each of the run's goroutines: a panic there fails the run
// (recover must be called by the deferred function itself, hence one function per kind).
func (e *Engine) recoverIn(where string, id int) {
	if r := recover(); r != nil {
		e.failWith(where, id, r)
	}
}

func (e *Engine) recoverWakeups() {
	if r := recover(); r != nil {
		e.failWith("wakeups", -1, r)
	}
}

func (e *Engine) failWith(where string, id int, r any) {
	if id >= 0 {
		where = fmt.Sprintf("%s %d", where, id)
	}
	pe := &PanicError{Where: where, Value: r, Stack: debug.Stack()}
	e.failed.once.Do(func() {
		e.failed.err = pe
		close(e.failed.ch)
	})
	e.stopAt.CompareAndSwap(0, int64(max(e.now(), 1)))
	e.stop.Store(true)
}

// err returns the run's panic, if any (after Run's goroutines have ended or been given up on).
func (f *failure) error() error {
	select {
	case <-f.ch:
		return f.err
	default:
		return nil
	}
}

// panicHook is set only by tests (SetPanicHookForTest): it is called once at the top of each VU
// goroutine ("vu"), in the executor's launch ("executor") and at each collector tick
// ("collector"), never per request, so that a test can make any of them panic.
var panicHook atomic.Pointer[func(point string, id int)]

// SetPanicHookForTest installs a function called at the engine's panic test points (see
// panicHook) and returns the function that removes it. For tests only.
func SetPanicHookForTest(f func(point string, id int)) (restore func()) {
	panicHook.Store(&f)
	return func() { panicHook.Store(nil) }
}

func testPoint(point string, id int) {
	if h := panicHook.Load(); h != nil {
		(*h)(point, id)
	}
}

// outcomeHook is set only by tests (SetOutcomeHookForTest): it sees every outcome the VUs record,
// so that a test knows a run's raw latencies exactly (cluster's exact-merge test). Per request it
// costs one atomic load.
var outcomeHook atomic.Pointer[func(metrics.Outcome)]

// SetOutcomeHookForTest installs a function called with every request's outcome as a VU records
// it (from the VUs' goroutines, concurrently: it must be safe for that) and returns the function
// that removes it. For tests only.
func SetOutcomeHookForTest(f func(metrics.Outcome)) (restore func()) {
	outcomeHook.Store(&f)
	return func() { outcomeHook.Store(nil) }
}

// recordOutcome records o in the VU's shard (and shows it to the test hook, if any).
func (v *vu) recordOutcome(o metrics.Outcome) {
	v.shard.Record(o)
	if h := outcomeHook.Load(); h != nil {
		(*h)(o)
	}
}
