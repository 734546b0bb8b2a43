package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// committed is the generated file as committed, from this package's directory.
var committed = filepath.Join("..", "..", "..", filepath.FromSlash(Path))

// TestContractUpToDate is CI's check that the committed TypeScript contract is what the Go code
// generates today.
func TestContractUpToDate(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v: run go generate ./... (or make contract) and commit %s", err, Path)
	}
	if msg := stale(got, want); msg != "" {
		t.Fatalf("%s is stale (%s): run go generate ./... (or make contract) and commit it", Path, msg)
	}
}

// stale describes the first difference between the committed and the generated file ("" = none).
func stale(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is %q, generated %q", i+1, gl, wl)
		}
	}
	return "they differ"
}

func TestStaleNamesTheFirstDifference(t *testing.T) {
	gen, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if msg := stale(gen, gen); msg != "" {
		t.Fatalf("equal files reported stale: %s", msg)
	}
	edited := bytes.Replace(gen, []byte("'constant-vus'"), []byte("'constant-vu'"), 1)
	line := bytes.Count(gen[:bytes.Index(gen, []byte("'constant-vus'"))], []byte("\n")) + 1
	if msg := stale(edited, gen); !strings.HasPrefix(msg, fmt.Sprintf("line %d is ", line)) || !strings.Contains(msg, "constant-vu'") {
		t.Errorf("an edited executor name: %q (want line %d)", msg, line)
	}
	if msg := stale(gen[:len(gen)-10], gen); msg == "" {
		t.Error("a truncated file is not reported")
	}
}

// The first line is Go's marker of generated code, which editors and linters honour.
func TestGeneratedHeader(t *testing.T) {
	gen, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(gen, []byte("\n"))
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).Match(first) {
		t.Errorf("first line %q is not Go's generated-code marker", first)
	}
}

type fixtureInner struct {
	N int `json:"n"`
}

type fixtureBase struct {
	ID int64 `json:"id"`
}

type fixtureCustom string

func (fixtureCustom) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

type fixture struct {
	fixtureBase
	Name     string                  `json:"name"`
	Opt      string                  `json:"opt,omitempty"`
	Ptr      *float64                `json:"ptr"`
	OptPtr   *fixtureInner           `json:"opt_ptr,omitempty"`
	List     []fixtureInner          `json:"list"`
	Counts   map[string]int64        `json:"counts,omitempty"`
	Any      any                     `json:"any"`
	When     time.Time               `json:"when"`
	Raw      json.RawMessage         `json:"raw"`
	Hidden   string                  `json:"-"`
	private  int                     // unexported: not encoded
	NoTag    bool                    // no tag: its Go name
	Nested   map[string]fixtureInner `json:"nested"`
	Custom   fixtureCustom           `json:"custom"`
	Flags    []bool                  `json:"flags,omitempty"`
	Defaults fixtureInner            `json:"defaults"`
}

// The writer follows encoding/json: names from tags, "-" and unexported fields skipped,
// omitempty optional, nil-able values nullable, embedded structs intersected, custom encodings mapped.
func TestTSWriterFollowsEncodingJSON(t *testing.T) {
	w := &tsWriter{
		names:   map[reflect.Type]string{reflect.TypeFor[fixtureInner](): "Inner"},
		custom:  map[string]customType{typeKey(reflect.TypeFor[time.Time]()): {ts: "string"}, "encoding/json.RawMessage": {ts: "unknown"}, typeKey(reflect.TypeFor[fixtureCustom]()): {ts: "'x'"}},
		fieldTS: map[string]string{"Fixture.raw": "Inner | null"},
	}
	got, err := w.write([]root{{"Fixture", fixture{}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
/** The JSON of Go's contract.fixture. */
export type Fixture = fixtureBase & {
  name: string;
  opt?: string;
  ptr: number | null;
  opt_ptr?: Inner;
  list: Inner[] | null;
  counts?: Record<string, number>;
  any: unknown;
  when: string;
  raw: Inner | null;
  NoTag: boolean;
  nested: Record<string, Inner> | null;
  custom: 'x';
  flags?: boolean[];
  defaults: Inner;
};

/** The JSON of Go's contract.fixtureBase. */
export type fixtureBase = {
  id: number;
};

/** The JSON of Go's contract.fixtureInner. */
export type Inner = {
  n: number;
};
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	_ = fixture{}.private
}

// A type with its own JSON encoding that the contract does not know, or two Go types with one
// TypeScript name, stop the generator rather than write a wrong contract.
func TestTSWriterRefusesWhatItCannotWrite(t *testing.T) {
	type withCustom struct {
		C fixtureCustom `json:"c"`
	}
	w := &tsWriter{}
	if _, err := w.write([]root{{"W", withCustom{}}}); err == nil || !strings.Contains(err.Error(), "MarshalJSON") {
		t.Errorf("unknown MarshalJSON: %v", err)
	}
	type other struct {
		N int `json:"n"`
	}
	type both struct {
		A fixtureInner `json:"a"`
		B other        `json:"b"`
	}
	w = &tsWriter{names: map[reflect.Type]string{reflect.TypeFor[fixtureInner](): "Same", reflect.TypeFor[other](): "Same"}}
	if _, err := w.write([]root{{"Both", both{}}}); err == nil || !strings.Contains(err.Error(), "would both be TypeScript Same") {
		t.Errorf("two types named Same: %v", err)
	}
}

func TestGoDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 24 * time.Hour: "24h",
		90 * time.Second: "1m30s", time.Millisecond: "1ms", 5 * time.Second: "5s", time.Hour + time.Second: "1h0m1s"} {
		if got := goDuration(d); got != want {
			t.Errorf("goDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
