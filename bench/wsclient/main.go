// Command wsclient attaches N websocket clients to a Volley run's live stream
// (/api/runs/:id/live) and reports, per client, what it received. bench/platform.sh uses it to
// run the platform with live viewers attached.
//
//	go run ./bench/wsclient -url ws://127.0.0.1:18089/api/runs/1/live -n 5 -timeout 60s
//
// With -start, it first starts the run itself (POST to that URL, as the UI's Run button does) and
// watches the run the server answers with: "{id}" in -url is replaced by its id. The benchmark
// uses this so that no other process (curl, jq, a status poll) runs beside the viewers while the
// run is measured; the viewers' streams end with the summary, which is when the run has ended.
//
//	wsclient -start http://127.0.0.1:18089/api/plans/1/runs -url 'ws://127.0.0.1:18089/api/runs/{id}/live'
//
// Output: one JSON line per client, then a total line:
//
//	{"client":0,"samples":10,"summary":true,"bytes":12345,"first_ms":3,"last_elapsed_s":10,"err":""}
//	{"clients":5,"with_summary":5,"samples":50,"run":7}
//
// Exit status 0 when every client received a summary, 1 otherwise (2: bad usage or the run could
// not be started).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

type result struct {
	Client       int     `json:"client"`
	Samples      int     `json:"samples"`
	Summary      bool    `json:"summary"`
	Bytes        int     `json:"bytes"`
	FirstMs      int64   `json:"first_ms"`       // connect → first message
	LastElapsedS float64 `json:"last_elapsed_s"` // elapsed_s of the last sample seen
	Gaps         int     `json:"gaps"`           // samples that repeat or skip a second
	Err          string  `json:"err"`
}

type envelope struct {
	Type string `json:"type"`
	Data struct {
		ElapsedS float64 `json:"elapsed_s"`
	} `json:"data"`
}

func main() {
	rawURL := flag.String("url", "", "websocket URL, ws://127.0.0.1:PORT/api/runs/ID/live ({id}: the run -start started)")
	startURL := flag.String("start", "", "POST here first to start a run (http://HOST:PORT/api/plans/ID/runs) and watch it")
	n := flag.Int("n", 5, "number of clients")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	usage := func(msg string) {
		fmt.Fprintln(os.Stderr, "wsclient: "+msg)
		fmt.Fprintln(os.Stderr, "usage: wsclient -url ws://HOST:PORT/api/runs/ID/live [-n 5] [-timeout 2m]")
		fmt.Fprintln(os.Stderr, "       wsclient -start http://HOST:PORT/api/plans/ID/runs -url 'ws://HOST:PORT/api/runs/{id}/live'")
		os.Exit(2)
	}
	if *n < 1 {
		usage("-n must be at least 1")
	}
	var runID int64
	if *startURL != "" {
		if !strings.Contains(*rawURL, "{id}") {
			usage("with -start, -url must contain {id}")
		}
		id, err := startRun(*startURL)
		if err != nil {
			usage("start the run: " + err.Error())
		}
		runID = id
		*rawURL = strings.ReplaceAll(*rawURL, "{id}", strconv.FormatInt(id, 10))
	}
	u, err := url.Parse(*rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		usage("bad -url " + *rawURL)
	}

	results := make([]result, *n)
	var wg sync.WaitGroup
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = watch(i, u.String(), *timeout)
		}()
	}
	wg.Wait()

	enc := json.NewEncoder(os.Stdout)
	ok := 0
	total := 0
	for _, r := range results {
		_ = enc.Encode(r)
		total += r.Samples
		if r.Summary {
			ok++
		}
	}
	if runID != 0 {
		fmt.Printf("{\"clients\":%d,\"with_summary\":%d,\"samples\":%d,\"run\":%d}\n", *n, ok, total, runID)
	} else {
		fmt.Printf("{\"clients\":%d,\"with_summary\":%d,\"samples\":%d}\n", *n, ok, total)
	}
	if ok != *n {
		os.Exit(1)
	}
}

// startRun starts a run (POST …/plans/:id/runs, answered 201 with the run) and returns its id.
func startRun(u string) (int64, error) {
	c := http.Client{Timeout: 10 * time.Second}
	res, err := c.Post(u, "application/json", nil)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(body)))
	}
	var run struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(body, &run); err != nil || run.ID <= 0 {
		return 0, fmt.Errorf("no run id in %q", body)
	}
	return run.ID, nil
}

// watch reads one client's stream until the server closes it after the summary, or the timeout.
func watch(i int, u string, timeout time.Duration) result {
	r := result{Client: i, FirstMs: -1}
	deadline := time.Now().Add(timeout)
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	start := time.Now()
	conn, _, err := d.Dial(u, nil)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(deadline)
	prev := 0.0
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			if !r.Summary {
				r.Err = err.Error()
			}
			return r
		}
		if r.FirstMs < 0 {
			r.FirstMs = time.Since(start).Milliseconds()
		}
		r.Bytes += len(msg)
		var env envelope
		if err := json.Unmarshal(msg, &env); err != nil {
			r.Err = "bad message: " + err.Error()
			return r
		}
		switch env.Type {
		case "sample":
			// each sample should follow the previous one by one second (the last one may cover a
			// partial second): a repeat or a jump is a gap
			if r.Samples > 0 && (env.Data.ElapsedS <= prev || env.Data.ElapsedS > prev+1.5) {
				r.Gaps++
			}
			prev = env.Data.ElapsedS
			r.LastElapsedS = env.Data.ElapsedS
			r.Samples++
		case "summary":
			r.Summary = true
		}
	}
}
