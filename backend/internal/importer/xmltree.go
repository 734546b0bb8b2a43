package importer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Bounds of the XML reader (jmx): deeper or larger documents are refused while streaming, before
// any tree of their size is built. JMeter's own files nest about 15 deep.
const (
	xmlMaxDepth    = 64
	xmlMaxElements = 200_000
)

// xnode is one XML element: its tag, attributes, the text directly inside it and its child elements.
type xnode struct {
	tag  string
	attr []xml.Attr
	text []byte
	kids []*xnode
}

// get returns the attribute name's value ("" when absent).
func (n *xnode) get(name string) string {
	for _, a := range n.attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// parseXMLTree reads data into a tree with encoding/xml's streaming decoder. It refuses a DOCTYPE
// (so no entity is ever declared; encoding/xml knows only the five predefined ones and fails on any
// other reference), more than xmlMaxDepth levels and more than xmlMaxElements elements.
func parseXMLTree(data []byte) (*xnode, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.CharsetReader = xmlCharset
	var stack []*xnode
	var root *xnode
	count := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			if bytes.HasPrefix(bytes.TrimSpace(t), []byte("DOCTYPE")) {
				return nil, fmt.Errorf("a DOCTYPE is not accepted (JMeter never writes one; it could declare entities)")
			}
		case xml.StartElement:
			if len(stack) >= xmlMaxDepth {
				return nil, fmt.Errorf("elements nest more than %d deep (line %d)", xmlMaxDepth, lineOf(d))
			}
			if count++; count > xmlMaxElements {
				return nil, fmt.Errorf("more than %d elements", xmlMaxElements)
			}
			n := &xnode{tag: t.Name.Local, attr: t.Attr}
			if len(stack) == 0 {
				if root != nil {
					return nil, fmt.Errorf("more than one root element")
				}
				root = n
			} else {
				top := stack[len(stack)-1]
				top.kids = append(top.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.text = append(top.text, t...)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no XML element")
	}
	return root, nil
}

// xmlCharset reads the encodings a hand-edited .jmx may declare besides UTF-8 (which JMeter
// writes): US-ASCII and ISO-8859-1 (Latin-1, whose bytes are the first 256 code points).
func xmlCharset(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "us-ascii", "ascii", "utf8":
		return r, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1":
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b)+len(b)/8)
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("encoding %q is not read (save the file as UTF-8)", label)
}

func lineOf(d *xml.Decoder) int {
	line, _ := d.InputPos()
	return line
}
