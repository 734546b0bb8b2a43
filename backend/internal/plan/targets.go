package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TargetJudge is the server's target policy as plan checking needs it (*netpolicy.Policy
// implements it).
type TargetJudge interface {
	// CheckHost returns why host (as a plan spells it, with or without port and brackets) is
	// denied, or nil.
	CheckHost(host string) error
}

// CheckTargets checks what a plan spells literally against the server's target policy: each
// request URL's host (unless it is templated), every http.hosts value, the http.proxy host and
// each monitor URL's host. Parse and Validate
// never do this — the policy is the server's, not the plan's — so the callers that run or store
// plans apply it (the API's plan create, update and run start; `volley run`). Hosts that a plan
// cannot spell in advance (redirect targets, names resolving to denied addresses) are refused
// when connecting instead (error kind blocked_target).
//
// It returns nil or a *ValidationError keyed like Validate's, e.g. "requests[0].url":
// "169.254.169.254 is denied by the server's target policy (link-local / cloud metadata)".
// A URL host is checked even when http.hosts maps it elsewhere.
func CheckTargets(p *Plan, j TargetJudge) error {
	if p == nil || j == nil {
		return nil
	}
	v := &ValidationError{}
	for i, r := range p.Requests {
		if host, ok := literalHost(r.URL); ok {
			if err := j.CheckHost(host); err != nil {
				v.add("requests["+strconv.Itoa(i)+"].url", err.Error())
			}
		}
	}
	names := make([]string, 0, len(p.HTTP.Hosts))
	for name := range p.HTTP.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, addr := range strings.Split(p.HTTP.Hosts[name], ",") {
			if addr = strings.TrimSpace(addr); addr == "" {
				continue
			}
			if err := j.CheckHost(addr); err != nil {
				v.add("http.hosts", fmt.Sprintf("%q → %v", name, err))
			}
		}
	}
	if p.HTTP.Proxy != "" {
		// Every connection of the run goes to the proxy: judged like a request URL's host.
		if addr, err := ProxyAddr(p.HTTP.Proxy); err == nil {
			if err := j.CheckHost(addr); err != nil {
				v.add("http.proxy", err.Error())
			}
		}
	}
	checkMonitorTargets(p, j, v)
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

// literalHost returns the host[:port] of a request URL, unless the URL is invalid (Validate
// reports that) or its host is templated (known only when the request is made).
func literalHost(raw string) (string, bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", false
	}
	rest := raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	if rest == "" || strings.Contains(rest, "{{") {
		return "", false
	}
	return rest, true
}
