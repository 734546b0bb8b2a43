package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The CSV export has one column per monitor series after the fixed ones, a gap as an empty cell;
// a run without monitors keeps the fixed header alone.
func TestCSVTargetColumns(t *testing.T) {
	samples := []metrics.Sample{
		{ElapsedS: 1, Requests: 1, Target: map[string]float64{"web1/cpu_percent": 12.5, "nginx/rss_bytes/nginx": 1048576}},
		{ElapsedS: 2, Requests: 1, Target: map[string]float64{"nginx/rss_bytes/nginx": 2097152}},
		{ElapsedS: 3, Requests: 1},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, samples); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(CSVHeader)
	if want := append(slices.Clone(CSVHeader), "target:nginx/rss_bytes/nginx", "target:web1/cpu_percent"); !slices.Equal(rows[0], want) {
		t.Fatalf("header %q, want %q", rows[0], want)
	}
	for i, want := range [][]string{{"1048576", "12.5"}, {"2097152", ""}, {"", ""}} {
		if got := rows[i+1][n:]; !slices.Equal(got, want) {
			t.Errorf("second %d: target cells %q, want %q", i+1, got, want)
		}
	}

	buf.Reset()
	if err := WriteCSV(&buf, samples[2:]); err != nil {
		t.Fatal(err)
	}
	rows, _ = csv.NewReader(&buf).ReadAll()
	if !slices.Equal(rows[0], CSVHeader) {
		t.Errorf("without monitors the header is %q", rows[0])
	}
}

// The HTML report has a Target section for a run with monitors: a chart per monitor and kind
// whose line breaks at a gap second, the summary's avg/max per series and the monitors' errors,
// in both languages; a run without monitors has no such section.
func TestHTMLTargetSection(t *testing.T) {
	ps := metrics.MonitorSeries{ID: "nginx/cpu_percent/nginx", Monitor: "nginx", Type: "process", Metric: "cpu_percent", Label: "nginx", Unit: "percent"}
	ms := metrics.MonitorSeries{ID: "nginx/rss_bytes/nginx", Monitor: "nginx", Type: "process", Metric: "rss_bytes", Label: "nginx", Unit: "bytes"}
	var samples []metrics.Sample
	for i := 1; i <= 6; i++ {
		s := metrics.Sample{ElapsedS: i, IntervalS: 1, Requests: 10, RPS: 10}
		if i != 3 { // second 3: the monitor timed out
			s.Target = map[string]float64{ps.ID: float64(10 * i), ms.ID: 8 << 20}
		}
		samples = append(samples, s)
	}
	sum := &metrics.Summary{Requests: 60, RPS: 10, TargetSeries: []metrics.MonitorSeries{ps, ms},
		Target:        []metrics.TargetStat{{MonitorSeries: ps, Avg: 34, Max: 60, Seconds: 5, Gaps: 1}, {MonitorSeries: ms, Avg: 8 << 20, Max: 8 << 20, Seconds: 5, Gaps: 1}},
		MonitorErrors: []metrics.MonitorError{{Monitor: "nginx", Message: "timeout after 800ms", T: 3000, Seconds: 1}}}
	for _, lang := range Langs {
		var buf bytes.Buffer
		if err := Write(&buf, "html", Report{Summary: sum, Samples: samples, Lang: lang}); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		i := strings.Index(page, `<section id="target">`)
		if i < 0 {
			t.Fatalf("%s: no target section", lang)
		}
		sec := page[i : i+strings.Index(page[i:], "</section>")]
		if strings.Contains(sec, "⟦") {
			t.Errorf("%s: a text without a dictionary entry in %s", lang, sec)
		}
		if n := strings.Count(sec, "<svg"); n != 2 {
			t.Errorf("%s: %d charts, want 2 (CPU, memory)", lang, n)
		}
		if n := strings.Count(sec, `<polyline class="s0"`); n != 4 { // two charts × two segments around the gap
			t.Errorf("%s: %d line segments, want 4 (the gap breaks each line)", lang, n)
		}
		for _, want := range []string{"timeout after 800ms", "<td>34</td><td>60</td><td>1 / 6</td>", "<td>8</td><td>8</td>"} {
			if !strings.Contains(sec, want) {
				t.Errorf("%s: the section lacks %q:\n%s", lang, want, sec)
			}
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, "html", Report{Summary: &metrics.Summary{Requests: 1}, Samples: samples[:0]}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="target"`) {
		t.Error("a target section without monitors")
	}
}
