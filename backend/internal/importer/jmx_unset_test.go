package importer

import (
	"os"
	"strings"
	"testing"
)

// TestJMXVariableOfAnExtractorNotImported: an extractor (or CSV Data Set) that is not imported
// sets nothing, so its variable's references stay as written with a note — the imported plan must
// never name a variable it does not set (found by FuzzImportJMX: plan.Parse rejected {{plan_id}}).
func TestJMXVariableOfAnExtractorNotImported(t *testing.T) {
	fixture, err := os.ReadFile("testdata/jmx/csv_assertions_extractors.jmx")
	if err != nil {
		t.Fatal(err)
	}
	const template = `<stringProp name="RegexExtractor.template">$1$</stringProp>`
	if !strings.Contains(string(fixture), template) {
		t.Fatal("the fixture changed: no regex template to mutate")
	}
	for name, edit := range map[string][2]string{
		"template $2$":      {template, `<stringProp name="RegexExtractor.template">$2$</stringProp>`},
		"header extraction": {`<stringProp name="RegexExtractor.useHeaders">false</stringProp>`, `<stringProp name="RegexExtractor.useHeaders">true</stringProp>`},
		"not RE2":           {`"plan":"(\w+)"`, `(?&lt;=plan)(\w+)`},
	} {
		t.Run(name, func(t *testing.T) {
			data := strings.Replace(string(fixture), edit[0], edit[1], 1)
			if data == string(fixture) {
				t.Fatalf("%q is not in the fixture", edit[0])
			}
			res, err := Import("jmx", []byte(data), Options{})
			if err != nil {
				t.Fatal(err)
			}
			parsePlan(t, res)
			b := impPlanJSON(t, res.Plan)
			if strings.Contains(string(b), "{{plan_id}}") || !strings.Contains(string(b), "/plans/${plan_id}") {
				t.Errorf("want the reference kept as written: %s", b)
			}
			if !strings.Contains(string(b), "{{uid}}") {
				t.Errorf("an imported extraction's variable lost its template: %s", b)
			}
			found := false
			for _, s := range res.Skipped {
				if s.Element == "${plan_id}" && strings.Contains(s.Reason, "not imported") {
					found = true
				}
			}
			if !found {
				t.Errorf("no note names ${plan_id}: %+v", res.Skipped)
			}
		})
	}
}
