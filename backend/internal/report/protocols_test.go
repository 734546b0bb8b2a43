package report

import (
	"strings"
	"testing"
)

// An HTTP/2 run's report has its responses by protocol, in both languages; a run without the
// figure (HTTP/1.1 plans, older runs) has no such section.
func TestHTMLProtocols(t *testing.T) {
	for _, lang := range Langs {
		r := fixture(30)
		r.Lang = lang
		if doc := render(t, r); strings.Contains(doc, template_escape(tr(lang, "h.protocols"))) {
			t.Errorf("%s: a run without protocols shows the section", lang)
		}
		r.Summary.Protocols = map[string]int64{"h2": 900, "http/1.1": 100}
		doc := render(t, r)
		for _, want := range []string{template_escape(tr(lang, "h.protocols")), template_escape(tr(lang, "col.protocol")),
			"<tr><td>h2</td><td>900</td><td>90.00 %</td></tr>", "<tr><td>http/1.1</td><td>100</td><td>10.00 %</td></tr>"} {
			if !strings.Contains(doc, want) {
				t.Errorf("%s: the page lacks %q", lang, want)
			}
		}
	}
}
