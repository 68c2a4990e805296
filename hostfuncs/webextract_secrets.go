package hostfuncs

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// A URL that carries a credential is refused before anything is fetched:
// fetching it would hand the credential to the page's server (and to every
// redirect target), and a script could use web_extract to smuggle a key
// out. What counts as a credential:
//
//   - user info with a password (https://user:pass@host/);
//   - a query or fragment parameter whose name contains key, token,
//     secret, password, passwd, auth (not "author"), signature, sig (as a
//     word), credential, session or sessid, in any case (api_key, apiKey,
//     access_token, X-Amz-Signature, PHPSESSID); common words that merely
//     contain "key" (keyword, keyboard, monkey, ...) are not names of keys;
//   - anywhere in the URL, percent-decoded or not, a value shaped like a
//     well-known key: see secretShapes.
//
// A sensitive name with an empty value (?token=) carries nothing and is
// fine. Parameter values are judged by shape only: ?sort=key or ?q=token
// is fine.

// secretShape is a well-known credential format.
type secretShape struct {
	name string
	re   *regexp.Regexp
	// random, when set, must hold for the match: it tells a random key from
	// an ordinary slug that happens to share the prefix.
	random func(string) bool
}

// secretShapes are the credential formats recognised anywhere in a URL.
// Each pattern starts at a non-alphanumeric boundary.
var secretShapes = []secretShape{
	{name: "Anthropic API key (sk-ant-...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(sk-ant-[A-Za-z0-9_-]{16,})`)},
	{name: "OpenAI-style API key (sk-...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(sk-[A-Za-z0-9_-]{20,})`), random: secretLooksRandom},
	{name: "Stripe key (sk_live_/rk_live_...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])([rs]k_(?:live|test)_[A-Za-z0-9]{16,})`)},
	{name: "GitHub token (ghp_/gho_/ghs_/ghu_/ghr_...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(gh[pousr]_[A-Za-z0-9]{30,})`)},
	{name: "GitHub token (github_pat_...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(github_pat_[A-Za-z0-9_]{20,})`)},
	{name: "GitLab token (glpat-...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(glpat-[A-Za-z0-9_-]{20,})`)},
	{name: "Slack token (xox?-...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(xox[abpr]-[A-Za-z0-9-]{10,})`)},
	{name: "AWS access key ID (AKIA...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])((?:AKIA|ASIA)[0-9A-Z]{16})(?:[^A-Za-z0-9]|$)`)},
	{name: "Google API key (AIza...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(AIza[0-9A-Za-z_-]{35})`)},
	{name: "Tavily API key (tvly-...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(tvly-[A-Za-z0-9_-]{16,})`)},
	{name: "Hugging Face token (hf_...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(hf_[A-Za-z0-9]{30,})`)},
	{name: "Bearer token", re: regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9])(bearer[ +:]+[A-Za-z0-9._~+/=-]{16,})`)},
	{name: "JSON Web Token (eyJ...)", re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)`)},
}

// secretLooksRandom reports whether s mixes upper case, lower case and digits,
// as random keys of 20 characters or more nearly always do and slugs
// (sk-learn-tutorial-for-beginners) do not.
func secretLooksRandom(s string) bool {
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return upper && lower && digit
}

// findSecretShape returns the name of the first credential shape found in
// s, and the matched text.
func findSecretShape(s string) (name, match string, ok bool) {
	for _, sh := range secretShapes {
		for _, m := range sh.re.FindAllStringSubmatch(s, -1) {
			if sh.random == nil || sh.random(m[1]) {
				return sh.name, m[1], true
			}
		}
	}
	return "", "", false
}

// hasSecretShape reports whether s, as is or percent-decoded (once and
// twice), holds a credential shape.
func hasSecretShape(s string) (string, bool) {
	for _, v := range decodedForms(s) {
		if name, _, ok := findSecretShape(v); ok {
			return name, true
		}
	}
	return "", false
}

// decodedForms returns s and its percent-decoded forms (query style, so
// '+' is a space, and twice, for double-encoded values).
func decodedForms(s string) []string {
	forms := []string{s}
	cur := s
	for range 2 {
		d, err := url.QueryUnescape(cur)
		if err != nil {
			d, err = url.PathUnescape(cur)
		}
		if err != nil || d == cur {
			break
		}
		forms = append(forms, d)
		cur = d
	}
	return forms
}

// benignKeyWords are ordinary words containing "key" that parameter names
// use without holding a key.
var benignKeyWords = regexp.MustCompile(`keywords?|keyboards?|monkeys?|turkeys?|hockey|donkeys?|jockeys?|whiskeys?`)

// sensitiveNameWords are the words that make a parameter name sensitive
// (besides "auth" and "sig", handled in sensitiveParamName).
var sensitiveNameWords = []string{"key", "token", "secret", "password", "passwd", "signature", "credential", "session", "sessid"}

// sigWord matches "sig" as a whole word of a parameter name, or at its end
// (url_sig, hmacsig), not inside "signup" or "design".
var sigWord = regexp.MustCompile(`(?:^|[^a-z])sig(?:[^a-z]|$)|sig$`)

// sensitiveParamName reports whether a query parameter named name may hold
// a credential.
func sensitiveParamName(name string) bool {
	n := strings.ToLower(name)
	n = benignKeyWords.ReplaceAllString(n, "_")
	for _, w := range sensitiveNameWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	if sigWord.MatchString(n) {
		return true
	}
	// "auth", "oauth_...", "authorization", "x-auth", but not "author",
	// "authors" or "authority".
	for i := 0; ; {
		j := strings.Index(n[i:], "auth")
		if j < 0 {
			return false
		}
		rest := n[i+j+4:]
		if !strings.HasPrefix(rest, "or") || strings.HasPrefix(rest, "oriz") || strings.HasPrefix(rest, "oris") {
			return true
		}
		i += j + 4
	}
}

// secretParam is one name=value pair of a query or fragment, still encoded.
type secretParam struct {
	name, value string
	hasValue    bool // the pair had an "="
}

// secretSplitParams splits a raw query (or fragment) at & and ; without
// decoding, keeping malformed pairs.
func secretSplitParams(raw string) []secretParam {
	var ps []secretParam
	for _, pair := range strings.FieldsFunc(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		name, value, eq := strings.Cut(pair, "=")
		ps = append(ps, secretParam{name, value, eq})
	}
	return ps
}

// secretUnescape decodes a query component, leaving it as is if malformed.
func secretUnescape(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// urlSecretCheck returns the whole-call refusal when raw (the i-th URL of
// the call, 1-based) carries a credential, or "" when it does not.
func urlSecretCheck(i int, raw string) string {
	shown, why, found := urlCredential(raw)
	if !found {
		return ""
	}
	where := fmt.Sprintf("URL %d", i)
	if shown != "" {
		where += " (" + shown + ")"
	}
	return fmt.Sprintf("Refused: %s looks like it carries an API key or other credential: %s. "+
		"web_extract does not send credentials to web pages. Remove the credential from the URL "+
		"and call web_extract again; nothing was fetched.", where, why)
}

// redirectSecretMsg is the per-URL error for a redirect to a URL carrying a
// credential.
func redirectSecretMsg(shown, why string) string {
	if shown == "" {
		shown = "a URL"
	}
	return fmt.Sprintf("Refused to follow a redirect to %s: it looks like it carries an API key or other credential: %s.", shown, why)
}

// urlCredential reports whether raw carries a credential, saying why and
// giving the URL with the credential replaced by REDACTED (shown is "" when
// even the redacted URL is not safe to show). Neither shown nor why ever
// repeats the credential.
func urlCredential(raw string) (shown, why string, found bool) {
	var reasons []string
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL, but its parameters may still be named like keys.
		if _, query, ok := strings.Cut(raw, "?"); ok {
			query, _, _ = strings.Cut(query, "#")
			if _, reasons = redactParams(query, "query parameter", nil); len(reasons) > 0 {
				return "", strings.Join(reasons, "; "), true
			}
		}
		if name, ok := hasSecretShape(raw); ok {
			return "", "it contains what looks like a credential (" + name + ")", true
		}
		return "", "", false
	}
	hide := false // the URL cannot be shown even redacted
	red := *u
	if u.User != nil {
		if pw, _ := u.User.Password(); pw != "" {
			reasons = append(reasons, "it has a password in its user info (user:password@)")
			red.User = url.UserPassword("REDACTED", "REDACTED")
		}
		if name, ok := hasSecretShape(u.User.Username()); ok {
			reasons = append(reasons, "its user name looks like a credential ("+name+")")
			if red.User == u.User {
				red.User = url.User("REDACTED")
			}
		}
	}
	red.RawQuery, reasons = redactParams(u.RawQuery, "query parameter", reasons)
	if frag := u.EscapedFragment(); strings.Contains(frag, "=") {
		frag, reasons = redactParams(frag, "fragment parameter", reasons)
		red.Fragment, _ = url.PathUnescape(frag)
		red.RawFragment = frag
	} else if name, ok := hasSecretShape(frag); ok {
		reasons = append(reasons, "its fragment looks like a credential ("+name+")")
		red.Fragment, red.RawFragment = "REDACTED", ""
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for k, seg := range segs {
		if name, ok := hasSecretShape(seg); ok {
			reasons = append(reasons, "a path segment looks like a credential ("+name+")")
			segs[k] = "REDACTED"
		}
	}
	red.RawPath = strings.Join(segs, "/")
	red.Path, _ = url.PathUnescape(red.RawPath)
	if name, ok := hasSecretShape(u.Host); ok {
		reasons = append(reasons, "its host name looks like a credential ("+name+")")
		hide = true
	}
	if len(reasons) == 0 {
		// Last resort: a shape spanning components, or hidden by encoding.
		if name, ok := hasSecretShape(raw); ok {
			reasons = append(reasons, "it contains what looks like a credential ("+name+")")
			hide = true
		}
	}
	if len(reasons) == 0 {
		return "", "", false
	}
	shown = red.String()
	if _, leaked := hasSecretShape(shown); leaked || hide {
		shown = ""
	}
	return shown, strings.Join(reasons, "; "), true
}

// plainParamName matches the parameter names a refusal may repeat.
var plainParamName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]{1,40}$`)

// redactParams checks the parameters of a raw query or fragment and
// returns it with the suspicious values replaced by REDACTED, appending a
// reason for each.
func redactParams(raw, what string, reasons []string) (string, []string) {
	if raw == "" {
		return raw, reasons
	}
	ps := secretSplitParams(raw)
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		name := secretUnescape(p.name)
		_, nameIsKey := hasSecretShape(p.name)
		// A name is only repeated when it is a plain identifier: an odd
		// one might hold the secret itself (?password:hunter2=1).
		label := fmt.Sprintf("%s %q", what, name)
		if !plainParamName.MatchString(name) {
			label = "a " + what + " with a credential-like name"
		}
		switch {
		case nameIsKey:
			reasons = append(reasons, "a "+what+" name looks like a credential")
			p.name, p.value = "REDACTED", "REDACTED"
		case sensitiveParamName(name) && strings.TrimSpace(secretUnescape(p.value)) != "":
			reasons = append(reasons, label+" may hold a credential")
			p.value = "REDACTED"
		default:
			if shape, ok := hasSecretShape(p.value); ok {
				reasons = append(reasons, fmt.Sprintf("the value of %s looks like a credential (%s)", label, shape))
				p.value = "REDACTED"
			}
		}
		if p.value == "REDACTED" && !plainParamName.MatchString(name) {
			p.name = "REDACTED"
		}
		if p.hasValue {
			out = append(out, p.name+"="+p.value)
		} else {
			out = append(out, p.name)
		}
	}
	return strings.Join(out, "&"), reasons
}
