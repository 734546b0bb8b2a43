// Package e2e holds Volley's end-to-end tests: the built binary against a real nginx, a real
// Chromium (chromedp) and real SQLite files. Run: go test -race -count=1 -v ./backend/e2e/
// (build the UI first: cd frontend && npm ci && npm run build). Set VOLLEY_E2E=1 to make missing
// nginx, Chromium or UI build a failure instead of a skip; VOLLEY_ARTIFACTS to move the screenshots.
package e2e
