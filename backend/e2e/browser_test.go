package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// newBrowser starts a headless Chromium (Debian's, never downloaded) with a fresh profile and
// returns a tab context that ends after timeout. Console errors and page exceptions are logged.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	requireTool(t, chromiumPath)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	var out safeBuf
	opts = append(opts, chromedp.CombinedOutput(&out))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)

	// Start the browser now, so a broken Chromium fails here with its output.
	if err := chromedp.Do(ctx); err != nil {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		t.Fatalf("start chromium: %v\n%s", err, truncate(out.String(), 4000))
	}
	var mu sync.Mutex
	var events []string
	messages := chromedp.Console(ctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning && m.Type != chromedp.ConsoleException {
				continue
			}
			mu.Lock()
			events = append(events, m.String())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab() // closes the browser
		cancelAlloc()
		<-consoleDone
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			t.Log("browser " + e)
		}
		if t.Failed() {
			t.Logf("--- chromium output (tail) ---\n%s", truncate(out.String(), 3000))
		}
	})
	return ctx
}

type safeBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 1<<20 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *safeBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// setField sets an input's or select's value as a user edit would and fires input and change, which
// Svelte's bind:value listens to. It fails the test if the element is missing or refuses the value.
func setField(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el) return "missing";
		el.focus();
		if (el.tagName === "SELECT" && ![...el.options].some(o => o.value === %[2]s)) return "no option";
		el.value = %[2]s;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		el.blur();
		return el.value === %[2]s ? "ok" : "value is " + el.value;
	})()`, jsString(sel), jsString(value))
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("set %s: %v", sel, err)
	}
	if res != "ok" {
		t.Fatalf("set %s = %q: %s (hook missing or renamed?)", sel, value, res)
	}
}

// waitJS polls a JavaScript expression until it is true, or fails the test naming what it waited for.
func waitJS(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		lastErr = err
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: browser context ended: %v", what, ctx.Err())
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// evalString evaluates a JavaScript expression that yields a string.
func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// visibleWithText is a JS expression: some element matching sel is rendered and has non-empty text.
func visibleWithText(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some(el => {
		const st = getComputedStyle(el);
		return el.getClientRects().length > 0 && st.visibility !== "hidden" && st.display !== "none" &&
			Number(st.opacity) > 0 && el.textContent.trim().length > 0;
	})`, jsString(sel))
}

// exists is a JS expression: an element matches sel.
func exists(sel string) string {
	return fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(sel))
}

// screenshot saves a full-page PNG into the artifacts folder and returns its path.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactsDir(t), name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(buf))
	return path
}

// openSPA navigates to base+fragment and waits until the SPA has rendered something.
func openSPA(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if strings.Contains(body, "UI not built") {
		if strict() {
			t.Fatalf("the server says the UI is not built: %s", truncate(body, 300))
		}
		t.Skipf("the server says the UI is not built: %s", truncate(body, 300))
	}
}

// goToHash changes the SPA route without reloading the page.
func goToHash(t *testing.T, ctx context.Context, hash string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %s`, jsString(hash)))); err != nil {
		t.Fatalf("go to %s: %v", hash, err)
	}
}
