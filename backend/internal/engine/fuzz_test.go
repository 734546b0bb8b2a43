package engine

import (
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/examples"
)

// FuzzTemplateRender: any template the plan accepts compiles and renders without a panic, for
// VUs with and without a data row and extracted values.
func FuzzTemplateRender(f *testing.F) {
	for _, s := range []string{"http://h/{{vu}}/{{iteration}}", "{{uuid}}", "{{random_int -1000000000000000000 1000000000000000000}}",
		"{{a}}-{{b}}", "{{x}}", "{{random_int 3 3}}", "plain", "{{ a }}{{b}}{{x}}{{vu}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := plan.CompileTemplate(s, map[string]int{"a": 0, "b": 1}, map[string]int{"x": 0})
		if err != nil {
			return
		}
		tm, err := bind(c, plan.SecretValues{"s": "v"})
		if err != nil {
			return
		}
		e := &Engine{start: time.Now()}
		for _, v := range []*vu{
			{e: e, id: 0, vars: [][]byte{nil}},
			{e: e, id: 7, iter: 1 << 40, row: [][]byte{[]byte("r0"), []byte("r1")}, vars: [][]byte{[]byte("xv")}},
		} {
			out := tm.render(nil, v)
			if tm == nil && len(out) != 0 {
				t.Fatalf("a static template rendered %q", out)
			}
		}
	})
}

// FuzzEngineNew: every plan Parse accepts is one the engine can prepare (New never refuses or
// panics on it).
func FuzzEngineNew(f *testing.F) {
	f.Add(examples.Demo)
	f.Add([]byte(`{"name":"d","flow":"sequence","data":{"csv":"a,b\n1,2","mode":"per-vu"},"think_time":"1ms",
		"requests":[{"url":"http://127.0.0.1:9/{{a}}","headers":{"X":"{{b}}","Host":"h"},"body":"{{random_int 1 5}}","weight":3,
		"checks":[{"type":"status","op":"eq","value":200},{"type":"json","path":"a","op":"exists"},{"type":"body","op":"contains","value":"x"}],
		"extract":[{"var":"t","from":"json","path":"a"},{"var":"h","from":"header","name":"X"},{"var":"r","from":"regex","pattern":"(x)"}]},
		{"url":"https://[::1]:8443/{{t}}{{h}}{{r}}"}],
		"load":{"executor":"constant-arrival-rate","rate":10,"duration":"1s","pre_allocated_vus":1},
		"http":{"hosts":{"[::1]":"127.0.0.1"}},"thresholds":["p(95)<1s",{"expr":"avg<1s","request":"GET http://127.0.0.1:9/{{a}}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Parse(data)
		if err != nil || len(p.Requests) > 20 {
			return
		}
		if _, err := newEngine(p, Options{Shards: 1}); err != nil {
			t.Fatalf("a plan Parse accepted is refused by the engine: %v", err)
		}
	})
}
