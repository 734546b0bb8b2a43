package report

import (
	"strings"
	"testing"
)

// The decoded size of compressed bodies is a figure of its own, in both languages, and only for
// a run that decoded bodies.
func TestHTMLDecodedBodies(t *testing.T) {
	for _, lang := range Langs {
		r := rich(10)
		r.Lang = lang
		r.Summary.BodyBytesDecoded = 3 << 20
		doc := render(t, r)
		if !strings.Contains(doc, "<b>3.0 MiB</b><span>"+template_escape(tr(lang, "fig.decoded"))+"</span>") {
			t.Errorf("%s: no decoded-size figure", lang)
		}
		r.Summary.BodyBytesDecoded = 0
		if doc := render(t, r); strings.Contains(doc, template_escape(tr(lang, "fig.decoded"))) {
			t.Errorf("%s: a decoded-size figure for a run that decoded nothing", lang)
		}
	}
}
