package contract

import (
	"fmt"
	"reflect"
	"strings"
)

// customType is how a Go type with its own JSON encoding is written in TypeScript.
type customType struct {
	ts string
	// object, when set, is a struct whose fields are the object form of the value (plan.Threshold
	// is a string or {expr, request, abort_on_fail}); it is declared under objectName.
	object     reflect.Type
	objectName string
}

// tsWriter declares TypeScript object types for Go structs from their JSON encoding (encoding/json's
// rules: the json tag's name, "-" skipped, omitempty → an optional field, a nil pointer, slice or
// map → null, an embedded struct without a tag → an intersection).
type tsWriter struct {
	// names gives each struct its TypeScript name (default: its Go name).
	names map[reflect.Type]string
	// custom maps types that implement json.Marshaler (key: package path + "." + name).
	custom map[string]customType
	// fieldTS overrides a field's type, as "TSName.json_name" → TypeScript (json.RawMessage fields).
	fieldTS map[string]string

	declared map[reflect.Type]string // struct → its TS name, once queued
	byName   map[string]reflect.Type
	queue    []reflect.Type
	out      strings.Builder
	err      error
}

func typeKey(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

var marshalerType = reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()

// name returns the TypeScript name of a struct, queueing its declaration.
func (w *tsWriter) name(t reflect.Type, as string) string {
	if n, ok := w.declared[t]; ok {
		return n
	}
	n := as
	if n == "" {
		n = w.names[t]
	}
	if n == "" {
		n = t.Name()
	}
	if n == "" {
		w.fail("an anonymous struct (%s) has no TypeScript name; give it a named type", t)
		return "unknown"
	}
	if other, dup := w.byName[n]; dup && other != t {
		w.fail("%s and %s would both be TypeScript %s; name one in contract.typeNames", other, t, n)
	}
	w.declared[t], w.byName[n] = n, t
	w.queue = append(w.queue, t)
	return n
}

func (w *tsWriter) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

// ts returns the TypeScript type of a Go type (without the null of a nil pointer, slice or map).
func (w *tsWriter) ts(t reflect.Type) string {
	if t.Name() != "" && (t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)) {
		c, ok := w.custom[typeKey(t)]
		if !ok {
			w.fail("%s has its own MarshalJSON: say how it is written in contract.customTypes", t)
			return "unknown"
		}
		if c.object != nil {
			w.name(c.object, c.objectName)
		}
		return c.ts
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Interface:
		return "unknown"
	case reflect.Pointer:
		return w.ts(t.Elem())
	case reflect.Slice, reflect.Array:
		e := w.ts(t.Elem())
		if strings.ContainsAny(e, " |") {
			e = "(" + e + ")"
		}
		return e + "[]"
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			w.fail("%s: only maps with string keys are JSON objects", t)
		}
		return "Record<string, " + w.ts(t.Elem()) + ">"
	case reflect.Struct:
		return w.name(t, "")
	}
	w.fail("%s (%s) has no JSON form the contract knows", t, t.Kind())
	return "unknown"
}

// nullable reports whether encoding/json may write a value of t as null.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

// declare writes the type of one struct.
func (w *tsWriter) declare(t reflect.Type) {
	name := w.declared[t]
	var extends []string
	var lines []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		jsonName, opts, _ := strings.Cut(tag, ",")
		if jsonName == "-" && opts == "" {
			continue
		}
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			extends = append(extends, w.name(f.Type, ""))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		typ, ok := w.fieldTS[name+"."+jsonName]
		if !ok {
			typ = w.ts(f.Type)
			_, isCustom := w.custom[typeKey(f.Type)]
			if nullable(f.Type) && !omitempty && !isCustom && typ != "unknown" {
				typ += " | null"
			}
		}
		opt := ""
		if omitempty {
			opt = "?"
		}
		lines = append(lines, fmt.Sprintf("  %s%s: %s;", jsonName, opt, typ))
	}
	// A type literal rather than an interface: it has an implicit index signature, so a value can
	// be passed where a Record<string, …> is expected.
	fmt.Fprintf(&w.out, "\n/** The JSON of Go's %s. */\nexport type %s = ", t, name)
	for _, e := range extends {
		w.out.WriteString(e + " & ")
	}
	w.out.WriteString("{\n")
	for _, l := range lines {
		w.out.WriteString(l + "\n")
	}
	w.out.WriteString("};\n")
}

// write declares the roots (TS name → a value of the Go type) and every struct they reach, in the
// order they are reached.
func (w *tsWriter) write(roots []root) (string, error) {
	w.declared, w.byName = map[reflect.Type]string{}, map[string]reflect.Type{}
	for _, r := range roots {
		t := reflect.TypeOf(r.value)
		if t.Kind() != reflect.Struct {
			return "", fmt.Errorf("root %s: %s is not a struct", r.name, t)
		}
		w.name(t, r.name)
	}
	for len(w.queue) > 0 {
		t := w.queue[0]
		w.queue = w.queue[1:]
		w.declare(t)
	}
	return w.out.String(), w.err
}

type root struct {
	name  string
	value any
}
