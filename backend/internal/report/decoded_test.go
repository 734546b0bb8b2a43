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

// The report's settings name the cookie jar's scope (the default too) and the codings asked for.
func TestHTMLSessionSettings(t *testing.T) {
	r := rich(10)
	doc := render(t, r)
	if !strings.Contains(doc, template_escape(tr("en", "set.cookies"))+"</dt><dd>vu</dd>") || strings.Contains(doc, template_escape(tr("en", "set.compression"))) {
		t.Error("default: the jar is vu and no compression is listed")
	}
	r.Plan.HTTP.Cookies, r.Plan.HTTP.Compression = "off", []string{"br", "gzip"}
	doc = render(t, r)
	for _, want := range []string{template_escape(tr("en", "set.cookies")) + "</dt><dd>off</dd>", template_escape(tr("en", "set.compression")) + "</dt><dd>br, gzip</dd>"} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q", want)
		}
	}
}
