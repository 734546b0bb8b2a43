package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

var planShape = reflect.TypeOf(Plan{})

var (
	durationType  = reflect.TypeOf(Duration(0))
	thresholdType = reflect.TypeOf(Threshold{})
)

// checkShape walks decoded JSON against the Go type and records, by field path, every unknown key
// and every value of the wrong JSON type, so that one response names all of them. It removes each
// offending key from its object (and empties bad array elements), so that what remains can still
// be decoded and its values validated in the same pass. It reports whether v itself is usable.
func checkShape(v any, t reflect.Type, path string, verr *ValidationError) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := path
	if name == "" {
		name = "plan"
	}
	if v == nil {
		return true // null means "unset": defaults apply
	}
	if _, isString := v.(string); isString && t == thresholdType {
		return true // the short form of a threshold
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			verr.add(path, "must be a duration string such as \"30s\"")
			return false
		}
		var d Duration
		if err := d.UnmarshalJSON([]byte(strconv.Quote(s))); err != nil {
			verr.add(path, err.Error())
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			verr.add(name, "must be an object")
			return false
		}
		fields := map[string]reflect.StructField{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("json"), ",")[0]
			if tag != "" && tag != "-" {
				fields[tag] = f
			}
		}
		for k, val := range obj {
			f, ok := fields[k]
			if !ok {
				verr.add(join(path, k), "unknown field")
				delete(obj, k)
				continue
			}
			if !checkShape(val, f.Type, join(path, k), verr) {
				delete(obj, k)
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			verr.add(name, "must be an array")
			return false
		}
		for i, e := range arr {
			if !checkShape(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", verr) {
				arr[i] = nil
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			verr.add(name, "must be an object")
			return false
		}
		for k, e := range obj {
			if _, ok := e.(string); !ok && t.Elem().Kind() == reflect.String {
				verr.add(name, fmt.Sprintf("value of %q must be a string", k))
				delete(obj, k)
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			verr.add(name, "must be a string")
			return false
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			verr.add(name, "must be true or false")
			return false
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			verr.add(name, "must be a whole number")
			return false
		}
		if _, err := n.Int64(); err != nil {
			// too large: whole, but past what an int64 holds (1e308, 2^63); a whole number written
			// with a fraction or an exponent (2.0, 1e3) is not one
			if f, ferr := n.Float64(); ferr == nil && f == math.Trunc(f) && math.Abs(f) >= 1<<63 || errors.Is(ferr, strconv.ErrRange) {
				verr.add(name, "is too large: "+string(n)[:min(len(n), 40)])
			} else {
				verr.add(name, "must be a whole number")
			}
			return false
		}
	case reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			verr.add(name, "must be a number")
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// errNoScheme is the problem of a URL without "://", with a URL parseURL accepts as the example.
const errNoScheme = "must start with http:// or https:// and name a host (e.g. http://127.0.0.1:8080/)"

// parseURL accepts absolute http and https URLs with a host.
func parseURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		// Suggest the URL with http:// in front only when that URL is itself accepted: a host
		// written as a {{placeholder}} ("{{base}}/") never is.
		if raw != "" && !strings.ContainsAny(raw, " \t") {
			if _, err := parseURL("http://" + raw); err == nil {
				return nil, fmt.Errorf("must start with http:// or https:// (e.g. http://%s)", raw)
			}
		}
		if strings.Contains(raw, "{{") {
			return nil, fmt.Errorf("%s; a {{placeholder}} can stand in the path or query, not for the host", errNoScheme)
		}
		return nil, fmt.Errorf("%s", errNoScheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("is not a valid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("must start with http:// or https://")
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("must name a host (e.g. http://127.0.0.1:8080/)")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %q is out of range", p)
		}
	}
	return u, nil
}
