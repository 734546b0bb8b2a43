package importer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-shellwords"

	"github.com/volley-load/volley/backend/internal/plan"
)

// curl: one or more curl command lines (as a shell would read them, or as cmd.exe would: the
// forms of a browser's "Copy as cURL (bash)" and "Copy as cURL (cmd)") → one request per URL.
// The words are split by go-shellwords (bash quoting) after a pass that rewrites what it does not
// know — $'…' (ANSI-C quoting) and backslashes in "…" — or by cmdWords (cmd.exe carets, then the
// Microsoft C runtime's argv rules). Commands are separated by ;, &&, || or a new line.
func init() { register("curl", importCurl, detectCurl) }

func detectCurl(data []byte) bool {
	s := bytes.TrimSpace(data)
	for bytes.HasPrefix(s, []byte("#")) { // comment lines
		_, rest, _ := bytes.Cut(s, []byte("\n"))
		s = bytes.TrimSpace(rest)
	}
	s = bytes.TrimPrefix(s, []byte("$ "))
	return bytes.HasPrefix(s, []byte("curl ")) || bytes.HasPrefix(s, []byte("curl.exe ")) || bytes.HasPrefix(s, []byte("curl\t"))
}

// curlIsCmdForm reports whether text is in cmd.exe quoting: carets at line ends or before quotes.
func curlIsCmdForm(s string) bool {
	return strings.Contains(s, "^\n") || strings.Contains(s, "^\r\n") || strings.Contains(s, `^"`) || strings.Contains(s, `^\^"`)
}

func importCurl(data []byte, o Options) (Result, error) {
	if !utf8.Valid(data) {
		return Result{}, &InputError{Format: "curl", Msg: "the command is not UTF-8 text"}
	}
	text := string(data)
	var cmds [][]string
	var err error
	if curlIsCmdForm(text) {
		cmds, err = curlCmdCommands(text)
	} else {
		cmds, err = curlBashCommands(text)
	}
	if err != nil {
		return Result{}, &InputError{Format: "curl", Msg: err.Error()}
	}
	b := newImpPlan("Imported curl command", o)
	n := 0
	for i, words := range cmds {
		if o.stopped() {
			break
		}
		if len(words) == 0 {
			continue
		}
		if w := words[0]; w != "curl" && w != "curl.exe" && !strings.HasSuffix(w, "/curl") && !strings.HasSuffix(w, `\curl.exe`) {
			b.skip(fmt.Sprintf("command %d (%s)", i+1, impClip(w, 40)), "not a curl command")
			continue
		}
		n++
		curlCommand(b, fmt.Sprintf("command %d", n), words[1:])
	}
	if _, ok := b.http["proxy"]; ok && b.http["version"] != nil {
		b.skip(fmt.Sprintf("--proxy %v", b.http["proxy"]), "HTTP/2 connections do not go through a proxy (http.proxy needs http.version 1.1): left out")
		delete(b.http, "proxy")
	}
	if len(b.reqs) == 1 {
		if u, err := url.Parse(b.reqs[0]["url"].(string)); err == nil {
			b.name = "curl " + b.reqs[0]["method"].(string) + " " + u.Host + u.Path
		}
	} else if len(b.reqs) > 1 {
		b.name = fmt.Sprintf("%d imported curl commands", len(b.reqs))
		b.extra["flow"] = "sequence"
	}
	return b.result("curl")
}

// curlValueFlags are options that take a value: the Volley mapping of each is in curlCommand;
// the others here are skipped with their value.
var curlValueFlags = map[string]bool{
	"-X": true, "--request": true, "-H": true, "--header": true, "-d": true, "--data": true, "--data-raw": true,
	"--data-ascii": true, "--data-binary": true, "--data-urlencode": true, "--json": true, "-u": true, "--user": true,
	"-b": true, "--cookie": true, "-A": true, "--user-agent": true, "-e": true, "--referer": true, "--url": true,
	"-m": true, "--max-time": true, "--connect-timeout": true, "--max-redirs": true, "--oauth2-bearer": true,
	"-F": true, "--form": true, "--form-string": true, "-T": true, "--upload-file": true, "-o": true, "--output": true,
	"-w": true, "--write-out": true, "-x": true, "--proxy": true, "-U": true, "--proxy-user": true, "--cacert": true,
	"--capath": true, "-E": true, "--cert": true, "--key": true, "--cert-type": true, "--key-type": true, "--pass": true,
	"--resolve": true, "--connect-to": true, "-c": true, "--cookie-jar": true, "-D": true, "--dump-header": true,
	"--retry": true, "--retry-delay": true, "--retry-max-time": true, "--limit-rate": true, "-r": true, "--range": true,
	"--interface": true, "--dns-servers": true, "--unix-socket": true, "--abstract-unix-socket": true, "--aws-sigv4": true,
	"-y": true, "--speed-time": true, "-Y": true, "--speed-limit": true, "-z": true, "--time-cond": true,
	"--ciphers": true, "--tls-max": true, "--config": true, "-K": true, "--trace": true, "--trace-ascii": true,
	"--stderr": true, "-t": true, "--telnet-option": true, "--local-port": true, "--noproxy": true,
	"--preproxy": true, "--variable": true, "--expand-url": true, "--expand-header": true, "--expand-data": true,
	"--url-query": true, "--keepalive-time": true, "--max-filesize": true, "--output-dir": true, "-Q": true, "--quote": true,
}

// curlQuietFlags change nothing a load test sends (output, progress, verbosity): dropped silently.
var curlQuietFlags = map[string]bool{
	"-s": true, "--silent": true, "-S": true, "--show-error": true, "-v": true, "--verbose": true, "-i": true,
	"--include": true, "-#": true, "--progress-bar": true, "--no-progress-meter": true, "-f": true, "--fail": true,
	"--fail-with-body": true, "-N": true, "--no-buffer": true, "-O": true, "--remote-name": true, "-J": true,
	"--remote-header-name": true, "--path-as-is": true, "-g": true, "--globoff": true, "-q": true, "--disable": true,
}

type curlState struct {
	r        impRequest
	urls     []string
	data     []string
	get      bool
	head     bool
	explicit string // -X
	user     string
	refused  string // why the command's body cannot be imported: the command is skipped
}

// curlCommand maps one curl command's arguments (after "curl") to requests of b.
func curlCommand(b *impPlan, elem string, args []string) {
	var st curlState
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || a[0] != '-' || a == "-" {
			st.urls = append(st.urls, a)
			continue
		}
		flag, val, hasVal := a, "", false
		if !strings.HasPrefix(a, "--") && len(a) > 2 {
			// -XPOST, -sSL: a short option with its value attached, or several short options.
			if curlValueFlags[a[:2]] {
				flag, val, hasVal = a[:2], a[2:], true
			} else {
				for _, c := range a[1:] {
					curlFlag(b, elem, &st, "-"+string(c), "")
				}
				continue
			}
		}
		if curlValueFlags[flag] && !hasVal {
			if i+1 >= len(args) {
				b.skip(elem+" "+flag, "the option has no value")
				break
			}
			i++
			val = args[i]
		}
		curlFlag(b, elem, &st, flag, val)
	}
	if len(st.urls) == 0 {
		b.skip(elem, "no URL")
		return
	}
	if st.refused != "" {
		b.skip(elem+" "+impClip(strings.Join(st.urls, " "), 100), st.refused)
		return
	}
	r := st.r
	if st.user != "" {
		if _, set := r.header("Authorization"); !set {
			r.setHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(st.user)))
		}
	}
	body := strings.Join(st.data, "&")
	method := "GET"
	switch {
	case st.head:
		method = "HEAD"
	case st.get:
	case len(st.data) > 0:
		method = "POST"
		if _, set := r.header("Content-Type"); !set {
			r.setHeader("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if st.explicit != "" {
		method = strings.ToUpper(st.explicit)
	}
	for j, u := range st.urls {
		req := r
		req.headers = append([][2]string(nil), r.headers...)
		req.method = method
		if !strings.Contains(u, "://") {
			u = "http://" + u // curl's default scheme
		}
		if st.get && body != "" {
			if strings.Contains(u, "?") {
				u += "&" + body
			} else {
				u += "?" + body
			}
		} else {
			req.body = body
		}
		req.url = u
		e := elem
		if len(st.urls) > 1 {
			e = fmt.Sprintf("%s URL %d", elem, j+1)
		}
		b.add(e, req)
	}
}

// curlFlag applies one option.
func curlFlag(b *impPlan, elem string, st *curlState, flag, val string) {
	e := elem + " " + flag
	switch flag {
	case "-X", "--request":
		st.explicit = val
	case "-H", "--header":
		name, value, ok := strings.Cut(val, ":")
		switch {
		case st.r.full():
			st.r.over++
		case ok && strings.TrimSpace(value) == "":
			b.skip(e+" "+val, "curl removes this header; the engine's own headers stay")
		case !ok && strings.HasSuffix(val, ";"):
			st.r.setHeader(strings.TrimSuffix(val, ";"), "")
		case !ok:
			b.skip(e+" "+impClip(val, 60), "not a Name: value header (a @file of headers is not read)")
		case impEngineHeader(strings.TrimSpace(name)):
			b.skip(e+" "+strings.TrimSpace(name), "the engine sets this header itself")
		default:
			st.r.setHeader(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	case "-d", "--data", "--data-ascii", "--data-binary":
		if strings.HasPrefix(val, "@") {
			st.refused = flag + " " + impClip(val, 60) + ": a body read from a file is not imported (paste the body with --data-raw)"
			return
		}
		if flag != "--data-binary" {
			val = strings.NewReplacer("\r", "", "\n", "").Replace(val)
		}
		st.data = append(st.data, val)
	case "--data-raw":
		st.data = append(st.data, val)
	case "--json":
		if strings.HasPrefix(val, "@") {
			st.refused = flag + " " + impClip(val, 60) + ": a body read from a file is not imported (paste the body with --data-raw)"
			return
		}
		st.data = append(st.data, val)
		if _, set := st.r.header("Content-Type"); !set {
			st.r.setHeader("Content-Type", "application/json")
		}
		if _, set := st.r.header("Accept"); !set {
			st.r.setHeader("Accept", "application/json")
		}
	case "--data-urlencode":
		name, content, hasEq := strings.Cut(val, "=")
		switch {
		case !hasEq && strings.Contains(val, "@"):
			st.refused = flag + " " + impClip(val, 60) + ": a value read from a file is not imported"
		case !hasEq:
			st.data = append(st.data, url.QueryEscape(val))
		case name == "":
			st.data = append(st.data, url.QueryEscape(content))
		default:
			st.data = append(st.data, name+"="+url.QueryEscape(content))
		}
	case "-G", "--get":
		st.get = true
	case "-I", "--head":
		st.head = true
	case "-u", "--user":
		st.user = val
	case "--oauth2-bearer":
		st.r.setHeader("Authorization", "Bearer "+val)
	case "-b", "--cookie":
		if !strings.Contains(val, "=") {
			b.skip(e+" "+impClip(val, 60), "cookies read from a file are not imported")
			return
		}
		if old, ok := st.r.header("Cookie"); ok {
			val = old + "; " + val
		}
		st.r.setHeader("Cookie", val)
	case "-A", "--user-agent":
		st.r.setHeader("User-Agent", val)
	case "-e", "--referer":
		st.r.setHeader("Referer", strings.TrimSuffix(val, ";auto"))
	case "--url":
		st.urls = append(st.urls, val)
	case "-k", "--insecure":
		b.http["insecure_skip_verify"] = true
	case "-L", "--location":
		b.http["follow_redirects"] = true
	case "--max-redirs":
		if n, err := strconv.Atoi(val); err == nil && n >= 0 && n <= 50 {
			b.http["max_redirects"] = n
		} else {
			b.skip(e+" "+val, "not a count of 0–50 redirects")
		}
	case "-m", "--max-time", "--connect-timeout":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || f <= 0 || f > 3600 {
			b.skip(e+" "+val, "not a number of seconds up to 3600")
			return
		}
		key := "timeout"
		if flag == "--connect-timeout" {
			key = "connect_timeout"
		}
		b.http[key] = strconv.FormatFloat(f*1000, 'f', 0, 64) + "ms"
	case "-x", "--proxy":
		u := val
		if !strings.Contains(u, "://") {
			u = "http://" + u // curl's default proxy scheme
		}
		if _, err := plan.ProxyAddr(u); err != nil {
			b.skip(e+" "+impClip(val, 60), "http.proxy takes only an http://host:port proxy: "+err.Error())
			return
		}
		b.http["proxy"] = strings.TrimSuffix(u, "/")
	case "--http2", "--http2-prior-knowledge":
		b.http["version"] = map[string]string{"--http2": plan.HTTP2, "--http2-prior-knowledge": plan.H2C}[flag]
	case "-F", "--form", "--form-string":
		b.skip(e+" "+impClip(val, 60), "multipart form bodies are not supported: the request is imported without this part (send a body with --data-raw and a Content-Type header)")
	case "--compressed":
		// what curl asks for with it (a -H Accept-Encoding of the command still wins, as in curl)
		b.http["compression"] = []string{"gzip", "deflate", "br"}
	default:
		if curlQuietFlags[flag] {
			return
		}
		if curlValueFlags[flag] {
			b.skip(e+" "+impClip(val, 60), "this option has no Volley equivalent")
			return
		}
		b.skip(e, "unknown or unsupported curl option")
	}
}

// curlBashCommands splits text into the words of each command, as bash would read them.
func curlBashCommands(text string) ([][]string, error) {
	text, long := curlBashPrepare(text)
	rs := []rune(text) // go-shellwords' Position counts runes
	var cmds [][]string
	for start := 0; start < len(rs); {
		p := shellwords.NewParser()
		words, err := p.Parse(string(rs[start:]))
		if err != nil {
			return nil, fmt.Errorf("the command line does not parse as shell words: %v (an unclosed quote?)", err)
		}
		for i, w := range words {
			words[i] = curlRestoreLong(w, long)
		}
		cmds = append(cmds, words)
		if p.Position < 0 {
			break
		}
		start += p.Position + 1
		for start < len(rs) && strings.ContainsRune(";&|<> \t", rs[start]) {
			start++ // ;  &&  ||  (a redirection's target is dropped with it)
		}
	}
	return cmds, nil
}

// Quoted strings of curlLongSegment bytes and more, or holding white space, are replaced by a
// placeholder before go-shellwords reads the text and put back in the words after: it builds each
// word a character at a time, which is quadratic in the word's length, and appends every quoted
// space to a buffer it never resets, which is quadratic in the command's quoted spaces (50 000
// -H 'Name: value' took 6 s).
const (
	curlLongSegment = 512
	curlPHOpen      = '\uE000'
	curlPHClose     = '\uE001'
)

func curlRestoreLong(w string, long []string) string {
	if len(long) == 0 || !strings.ContainsRune(w, curlPHOpen) {
		return w
	}
	var sb strings.Builder
	for {
		i := strings.IndexRune(w, curlPHOpen)
		j := strings.IndexRune(w, curlPHClose)
		if i < 0 || j < i {
			sb.WriteString(w)
			return sb.String()
		}
		n, err := strconv.Atoi(w[i+len(string(curlPHOpen)) : j])
		sb.WriteString(w[:i])
		if err == nil && n >= 0 && n < len(long) {
			sb.WriteString(long[n])
		}
		w = w[j+len(string(curlPHClose)):]
	}
}

// curlBashPrepare rewrites text into what go-shellwords reads as bash does: line continuations
// dropped, new lines outside quotes made command separators, $'…' turned into '…' (ANSI-C escapes
// decoded), and in "…" a backslash kept before characters it does not escape in bash. Quoted
// strings of curlLongSegment bytes and more or with white space become placeholders (curlRestoreLong), their values returned.
func curlBashPrepare(text string) (string, []string) {
	var out, seg, raw strings.Builder // seg: the quoted string's value; raw: its rewritten text
	var long []string
	usePH := !strings.ContainsRune(text, curlPHOpen) && !strings.ContainsRune(text, curlPHClose)
	closeSeg := func() {
		if usePH && (seg.Len() >= curlLongSegment || strings.ContainsAny(seg.String(), " \t\r\n")) {
			out.WriteString(string(curlPHOpen) + strconv.Itoa(len(long)) + string(curlPHClose))
			long = append(long, seg.String())
		} else {
			out.WriteString(raw.String())
		}
		seg.Reset()
		raw.Reset()
	}
	const (
		plain = iota
		single
		double
	)
	state := plain
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch state {
		case single:
			raw.WriteByte(c)
			if c == '\'' {
				state = plain
				closeSeg()
			} else {
				seg.WriteByte(c)
			}
		case double:
			switch {
			case c == '\\' && i+1 < len(text):
				n := text[i+1]
				switch n {
				case '$', '`', '"', '\\':
					raw.WriteByte('\\')
					raw.WriteByte(n)
					seg.WriteByte(n)
				case '\n':
				default:
					raw.WriteString(`\\`) // a literal backslash, which go-shellwords would drop
					seg.WriteByte('\\')
					continue
				}
				i++
			case c == '"':
				raw.WriteByte(c)
				state = plain
				closeSeg()
			default:
				raw.WriteByte(c)
				seg.WriteByte(c)
			}
		default:
			switch {
			case c == '\\' && i+1 < len(text) && text[i+1] == '\n':
				i++
			case c == '\\' && i+2 < len(text) && text[i+1] == '\r' && text[i+2] == '\n':
				i += 2
			case c == '\\' && i+1 < len(text):
				out.WriteByte(c)
				out.WriteByte(text[i+1])
				i++
			case c == '$' && i+1 < len(text) && text[i+1] == '\'':
				s, n := curlANSIC(text[i+2:])
				raw.WriteByte('\'')
				raw.WriteString(strings.ReplaceAll(s, "'", `'\''`))
				raw.WriteByte('\'')
				seg.WriteString(s)
				closeSeg()
				i += 1 + n
			case c == '\'':
				raw.WriteByte(c)
				state = single
			case c == '"':
				raw.WriteByte(c)
				state = double
			case c == '\n':
				out.WriteByte(';')
			case c == '\r':
			case c == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\n' || text[i-1] == '\t'):
				for i+1 < len(text) && text[i+1] != '\n' { // a comment
					i++
				}
			default:
				out.WriteByte(c)
			}
		}
	}
	out.WriteString(raw.String()) // an unclosed quote: go-shellwords reports it
	return out.String(), long
}

// curlANSIC decodes the text of $'…' up to its closing quote: the string and the bytes read (the
// quote included; all of s when it is not closed).
func curlANSIC(s string) (string, int) {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' {
			return out.String(), i + 1
		}
		if c != '\\' || i+1 >= len(s) {
			out.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			out.WriteByte('\a')
		case 'b':
			out.WriteByte('\b')
		case 'e', 'E':
			out.WriteByte(0x1b)
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'v':
			out.WriteByte('\v')
		case '\\', '\'', '"', '?':
			out.WriteByte(e)
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < max && curlIsHex(s[j]) {
				j++
			}
			if j == i+1 {
				out.WriteByte('\\')
				out.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				out.WriteByte(byte(v))
			} else {
				out.WriteRune(rune(v))
			}
			i = j - 1
		case 'c':
			if i+1 < len(s) {
				i++
				out.WriteByte(s[i] & 0x1f)
			}
		default:
			if e >= '0' && e <= '7' {
				j := i
				for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 16)
				out.WriteByte(byte(v))
				i = j - 1
				continue
			}
			out.WriteByte('\\')
			out.WriteByte(e)
		}
	}
	return out.String(), len(s)
}

func curlIsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// curlCmdCommands splits text as cmd.exe and then the program's C runtime would: carets escape the
// next character (a caret at a line's end continues the command; Chromium writes a new line
// inside a value as ^ followed by two line breaks), "…" spans toggle the carets off, and & or a
// new line separate commands; each command's words then follow the Microsoft C runtime rules
// (curlCmdArgv).
func curlCmdCommands(text string) ([][]string, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var cmds [][]string
	var line strings.Builder
	quoted := false
	flush := func() {
		if w := curlCmdArgv(line.String()); len(w) > 0 {
			cmds = append(cmds, w)
		}
		line.Reset()
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"':
			quoted = !quoted
			line.WriteByte(c)
		case quoted && c != '\n':
			line.WriteByte(c)
		case c == '^' && i+1 < len(text):
			i++
			if text[i] == '\n' {
				if i+1 < len(text) && text[i+1] == '\n' {
					line.WriteByte('\n') // ^ + two line breaks: a line break in the value
					i++
				}
				continue
			}
			line.WriteByte(text[i])
		case c == '\n' || c == '&' && !quoted:
			quoted = false
			flush()
		default:
			line.WriteByte(c)
		}
	}
	flush()
	return cmds, nil
}

// curlCmdArgv splits a command line into words by the Microsoft C runtime's rules: white space
// separates words outside quotes; 2n backslashes before a quote are n backslashes and the quote
// opens or closes quoting, 2n+1 are n and a literal quote; "" inside quotes is a literal quote;
// other backslashes are literal.
func curlCmdArgv(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				w.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					w.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				w.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inWord = true
		case c == '"':
			if quoted && i+1 < len(s) && s[i+1] == '"' {
				w.WriteByte('"')
				i++
			} else {
				quoted = !quoted
			}
			inWord = true
		case (c == ' ' || c == '\t' || c == '\n') && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
