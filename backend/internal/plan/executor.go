package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The executor registry. Each executor is described in one file of package engine
// (engine/executor_*.go), which registers it here from its init function: its load fields, its
// validation, length, peak VUs and model on this side, its run logic on the engine's. Parse,
// Validate, Load.Length, Load.PeakVUs and Caps consult the registry, so a program that parses
// plans must import package engine (the server and the CLI do; a test of a package that does not
// otherwise import it adds `import _ ".../internal/engine"`). Without it no executor is known and
// every plan is refused at load.executor.

// Model is an executor's load model.
type Model string

const (
	// ClosedModel: a VU starts its next iteration only when the previous one has finished, so a
	// slower target receives less load.
	ClosedModel Model = "closed"
	// OpenModel: iterations start on an absolute schedule whatever the target does; an arrival
	// that finds no free VU is a dropped iteration.
	OpenModel Model = "open"
)

// FieldKind is the JSON type of a load field: "int" (a whole number), "duration" (a string such
// as "30s"), "stages" (an array of {duration, target}) or "levels" (an array of whole numbers).
type FieldKind string

const (
	IntField      FieldKind = "int"
	DurationField FieldKind = "duration"
	StagesField   FieldKind = "stages"
	LevelsField   FieldKind = "levels"
)

// LoadField is one field of "load" that an executor takes.
type LoadField struct {
	Name     string // JSON name inside "load", e.g. "vus"
	Kind     FieldKind
	Required bool
	// Default is the value Parse fills when the field is absent, in its JSON form ("10m",
	// []int{10, 50, …}), or nil (none, or one that depends on other fields: ExecutorSpec.Defaults).
	Default any
	HelpKey string // the UI's locale key of the field's label, e.g. "editor.vus"
}

// ExecutorInfo is what the UI needs to know of an executor.
type ExecutorInfo struct {
	Name  string // "constant-vus"
	Model Model
	// Fields are the load fields the executor takes, in the form's order; executor and
	// graceful_stop are common to all executors and not listed.
	Fields  []LoadField
	HelpKey string // the UI's locale key of its one-line description, "editor.executorHelp.NAME"
}

// ExecutorSpec is an executor's registration (RegisterExecutor): its description and the plan-side
// rules that differ between executors. Rules every load field obeys whatever the executor (VU
// bounds, rate bounds, durations ≤ 24h, stage and level bounds) stay in Load.validate.
type ExecutorSpec struct {
	ExecutorInfo
	// Order is its place in the UI's list (ExecutorInfos), lowest first.
	Order int
	// Defaults fills defaults that depend on other fields, after the fields' own Default values
	// (nil: none).
	Defaults func(l *Load)
	// Validate adds the executor's own problems to v once the common checks have run (nil: none).
	Validate func(l *Load, v *ValidationError)
	// Length is how long the load model runs when nothing stops it early (Load.Length).
	Length func(l *Load) time.Duration
	// PeakVUs is the most VUs it may run at once (Load.PeakVUs).
	PeakVUs func(l *Load) int
	// PeakRate is an open model's highest arrival rate in iterations per second and the field that
	// sets it (nil: a closed model, no rate).
	PeakRate func(l *Load) (perSecond float64, field string)
	// VUsField and LengthField name the field path that sets the peak VUs and the length, for the
	// messages of Caps (nil: "load.vus" and "load.duration").
	VUsField    func(l *Load) string
	LengthField func(l *Load) string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*ExecutorSpec{}
	ordered    []*ExecutorSpec // by Order, then name
)

// RegisterExecutor adds an executor. It is meant for init functions and panics when the name is
// empty or taken, a field is not a load field, or Length or PeakVUs is missing.
func RegisterExecutor(s ExecutorSpec) {
	if s.Name == "" || s.Length == nil || s.PeakVUs == nil {
		panic("plan: RegisterExecutor needs a name, Length and PeakVUs")
	}
	if s.Model != ClosedModel && s.Model != OpenModel {
		panic(fmt.Sprintf("plan: executor %q: model %q is not closed or open", s.Name, s.Model))
	}
	for _, f := range s.Fields {
		if _, ok := loadFieldIndex[f.Name]; !ok {
			panic(fmt.Sprintf("plan: executor %q: %q is not a load field", s.Name, f.Name))
		}
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic(fmt.Sprintf("plan: executor %q registered twice", s.Name))
	}
	spec := &s
	registry[s.Name] = spec
	ordered = append(ordered, spec)
	slices.SortStableFunc(ordered, func(a, b *ExecutorSpec) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
}

// LookupExecutor returns the registration of an executor.
func LookupExecutor(name string) (*ExecutorSpec, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// ExecutorInfos returns the registered executors in the UI's order. The slices are copies.
func ExecutorInfos() []ExecutorInfo {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]ExecutorInfo, len(ordered))
	for i, s := range ordered {
		out[i] = s.ExecutorInfo
		out[i].Fields = slices.Clone(s.Fields)
	}
	return out
}

// ExecutorNames returns the names of the registered executors in the UI's order.
func ExecutorNames() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, len(ordered))
	for i, s := range ordered {
		out[i] = s.Name
	}
	return out
}

// loadFieldIndex maps the JSON name of each Load field to its struct field index.
var loadFieldIndex = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Load{})
	for i := 0; i < t.NumField(); i++ {
		name := jsonName(t.Field(i))
		if name != "" && name != "executor" && name != "graceful_stop" {
			m[name] = i
		}
	}
	return m
}()

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}

// fillDefault sets an absent field to its Default.
func (l *Load) fillDefault(f LoadField) {
	if f.Default == nil || l.set()[f.Name] {
		return
	}
	v := reflect.ValueOf(l).Elem().Field(loadFieldIndex[f.Name])
	switch d := f.Default.(type) {
	case string: // a duration
		t, err := time.ParseDuration(d)
		if err != nil {
			panic("plan: default " + strconv.Quote(d) + " of " + f.Name + " is not a duration")
		}
		v.SetInt(int64(t))
	case int:
		v.SetInt(int64(d))
	case []int:
		v.Set(reflect.ValueOf(slices.Clone(d)))
	default:
		panic(fmt.Sprintf("plan: default %v of %s has an unsupported type", d, f.Name))
	}
}
