package main

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runAgentCmd runs `volley agent args…` as main does (flag errors are usage errors) and returns
// its error.
func runAgentCmd(args ...string) error {
	root := &cobra.Command{Use: "volley", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(agentCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetArgs(append([]string{"agent"}, args...))
	return root.Execute()
}

// volley agent refuses a bad --weight, --labels or --id as a usage error (exit 2) before it
// connects, in its own words: no strconv message, no key given twice silently, labels in the
// bounds a controller's hello takes, an id quoted at most 64 bytes of it, and an id that looks
// like a join token never quoted (a secret on stderr).
func TestAgentFlagsRefusedBeforeConnecting(t *testing.T) {
	secret := strings.Repeat("s", 43)
	tok := "vly1." + secret + "." + strings.Repeat("ab", 32)
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("k%d=v", i)
	}
	const weightMsg = "--weight must be a whole number from 0 to 1000"
	for _, c := range []struct {
		args []string
		want string // "": valid (it then fails to connect: nothing listens on port 1)
	}{
		{[]string{"--weight", "1e308"}, weightMsg},
		{[]string{"--weight", "NaN"}, weightMsg},
		{[]string{"--weight", "2.5"}, weightMsg},
		{[]string{"--weight", "-1"}, weightMsg},
		{[]string{"--weight", "1001"}, weightMsg},
		{[]string{"--weight", "99999999999999999999999"}, weightMsg},
		{[]string{"--weight", "1000", "--labels", " zone = eu , rack=3"}, ""},
		{[]string{"--labels", "a=1,a=2"}, `--labels: key "a" is given twice`},
		{[]string{"--labels", "a=1, a =2"}, `--labels: key "a" is given twice`},
		{[]string{"--labels", "zone"}, `--labels: "zone" is not key=value`},
		{[]string{"--labels", strings.Join(many, ",")}, "--labels: 21 labels: at most 20"},
		{[]string{"--labels", strings.Repeat("k", 64) + "=v"}, "a key is 1–63 bytes"},
		{[]string{"--labels", "zone=" + strings.Repeat("v", 254)}, `label "zone": its value is 254 bytes, at most 253`},
		{[]string{"--labels", " =v"}, `"=v" is not key=value`},
		{[]string{"--id", strings.Repeat("X", 100_000)}, `--id "` + strings.Repeat("X", 64) + `…": an agent id is 1-63`},
		{[]string{"--id", tok}, "--id looks like a join token; give it with --token"},
		{[]string{"--id", " " + tok}, "--id looks like a join token; give it with --token"},
		{[]string{"--id", "local"}, `--id "local" is the controller's own in-process agent's id`},
		{[]string{"--id", "local-2"}, ""},
		{[]string{"--allow-target", ""}, "--allow-target: an empty entry (give host names or IPs, or leave the flag out"},
		{[]string{"--allow-target=", "--allow-target", "127.0.0.1"}, "--allow-target: an empty entry"},
		{[]string{"--allow-target", "a.test,,b.test"}, "--allow-target: an empty entry"},
		{[]string{"--allow-target", " "}, "--allow-target: an empty entry"},
		{[]string{"--allow-target", "999.1.1.1"}, `--allow-target: "999.1.1.1" looks like an IPv4 address but is not one`},
		{[]string{"--allow-target", "127.0.0.1,api.test:8080"}, ""},
	} {
		err := runAgentCmd(append([]string{"--nats", "nats://127.0.0.1:1", "--token", tok, "--id", "gen-1"}, c.args...)...)
		var ue usageError
		switch {
		case err == nil:
			t.Errorf("%.80q: no error", c.args)
		case c.want == "" && (errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot join")):
			t.Errorf("%.80q: %v, want valid flags and no connection", c.args, err)
		case c.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%.80q: %.300v, want a usage error with %q", c.args, err, c.want)
		case len(err.Error()) > 400 || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "strconv"):
			t.Errorf("%.80q: %.500q", c.args, err)
		}
	}
}

// volley agent without what it needs to join names exactly what is missing (a usage error, exit
// 2): the URL, the join token — with the VOLLEY_JOIN_TOKEN environment variable among its sources —
// or both; a token from the environment counts as given.
func TestAgentSaysWhatIsMissing(t *testing.T) {
	tok := "vly1." + strings.Repeat("s", 43) + "." + strings.Repeat("ab", 32)
	const (
		needURL   = "--nats nats://HOST:PORT is needed"
		needToken = "a join token (--token, --token-file, or the VOLLEY_JOIN_TOKEN environment variable) is needed"
		needBoth  = "--nats nats://HOST:PORT and a join token (--token, --token-file, or the VOLLEY_JOIN_TOKEN environment variable) are needed"
	)
	for _, c := range []struct {
		env     string
		args    []string
		want    string
		notWant string
	}{
		{"", nil, needBoth, ""},
		{"", []string{"--nats", "nats://127.0.0.1:1"}, needToken, "--nats"},
		{"", []string{"--token", tok}, needURL, "token"},
		{tok, nil, needURL, "token"},
	} {
		t.Setenv("VOLLEY_JOIN_TOKEN", c.env)
		err := runAgentCmd(c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || c.notWant != "" && strings.Contains(err.Error(), c.notWant) {
			t.Errorf("env %t, %q: %v, want a usage error with %q", c.env != "", c.args, err, c.want)
		}
	}
}

// Labels are trimmed around keys and values.
func TestParseLabelsTrims(t *testing.T) {
	got, err := parseLabels(" x = y ,zone=eu west ,empty=")
	want := map[string]string{"x": "y", "zone": "eu west", "empty": ""}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
