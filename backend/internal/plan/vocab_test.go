package plan

import (
	"strings"
	"testing"
)

// vocabPlan is a valid plan whose first request is changed by edit before validation.
func vocabPlan(t *testing.T, edit func(p *Plan)) error {
	t.Helper()
	p, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	edit(p)
	return p.Validate()
}

func fieldErr(err error, field string) string {
	if ve, ok := err.(*ValidationError); ok {
		return ve.Fields[field]
	}
	return ""
}

// Every word of the tables is accepted, and a word outside them is refused with a message that
// lists the table: the validation and the generated frontend contract read the same words.
func TestVocabularyTablesDriveValidation(t *testing.T) {
	values := map[string]any{"status": 200.0, "header": "json", "body": "ok", "json": "x", "latency": "200ms"}
	for _, ct := range CheckTypes {
		for _, op := range ct.Ops {
			err := vocabPlan(t, func(p *Plan) {
				p.Requests[0].Checks = []Check{{Type: ct.Type, Op: op, Value: values[ct.Type], Name: "Content-Type", Path: "a.b"}}
			})
			if err != nil {
				t.Errorf("check %s %s: %v", ct.Type, op, err)
			}
		}
		err := vocabPlan(t, func(p *Plan) {
			p.Requests[0].Checks = []Check{{Type: ct.Type, Op: "like", Value: values[ct.Type], Name: "X", Path: "a"}}
		})
		if msg := fieldErr(err, "requests[0].checks[0].op"); !strings.Contains(msg, strings.Join(ct.Ops, ", ")) {
			t.Errorf("check %s with op like: %q", ct.Type, msg)
		}
	}
	err := vocabPlan(t, func(p *Plan) { p.Requests[0].Checks = []Check{{Type: "bogus", Op: "eq"}} })
	if msg := fieldErr(err, "requests[0].checks[0].type"); msg != `"bogus" is not a check type (status, header, body, json, latency)` {
		t.Errorf("unknown check type: %q", msg)
	}

	for _, src := range ExtractSources {
		// With its argument the extraction is valid; without it the argument's field is named.
		x := Extract{Var: "v", From: src.From}
		arg := map[string]*string{"path": &x.Path, "name": &x.Name, "pattern": &x.Pattern}[src.Arg]
		if arg == nil {
			t.Fatalf("source %s: argument %q is not a field of Extract", src.From, src.Arg)
		}
		if err := vocabPlan(t, func(p *Plan) { p.Requests[0].Extract = []Extract{x} }); fieldErr(err, "requests[0].extract[0]."+src.Arg) == "" {
			t.Errorf("source %s without %s: %v", src.From, src.Arg, err)
		}
		*arg = "a"
		if err := vocabPlan(t, func(p *Plan) { p.Requests[0].Extract = []Extract{x} }); err != nil {
			t.Errorf("source %s with %s: %v", src.From, src.Arg, err)
		}
	}
	err = vocabPlan(t, func(p *Plan) { p.Requests[0].Extract = []Extract{{Var: "v", From: "xpath"}} })
	if msg := fieldErr(err, "requests[0].extract[0].from"); msg != `"xpath" is not one of json, header, regex, cookie` {
		t.Errorf("unknown source: %q", msg)
	}

	for _, m := range Methods {
		if err := vocabPlan(t, func(p *Plan) { p.Requests[0].Method = m }); err != nil {
			t.Errorf("method %s: %v", m, err)
		}
	}
	err = vocabPlan(t, func(p *Plan) { p.Requests[0].Method = "FETCH" })
	if msg := fieldErr(err, "requests[0].method"); msg != `"FETCH" is not one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS` {
		t.Errorf("unknown method: %q", msg)
	}
	for _, f := range Flows {
		if err := vocabPlan(t, func(p *Plan) { p.Flow = f }); err != nil {
			t.Errorf("flow %s: %v", f, err)
		}
	}
	if msg := fieldErr(vocabPlan(t, func(p *Plan) { p.Flow = "random" }), "flow"); msg != `"random" is not one of weighted, sequence` {
		t.Errorf("unknown flow: %q", msg)
	}
	for _, m := range DataModes {
		if err := vocabPlan(t, func(p *Plan) { p.Data = &Data{CSV: "a\n1", Mode: m} }); err != nil {
			t.Errorf("data mode %s: %v", m, err)
		}
	}
	if msg := fieldErr(vocabPlan(t, func(p *Plan) { p.Data = &Data{CSV: "a\n1", Mode: "shuffled"} }), "data.mode"); msg != `"shuffled" is not one of per-iteration, per-vu` {
		t.Errorf("unknown data mode: %q", msg)
	}
}
