package config

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the one home of the enums' normalisers: each maps a value as a person or a
// program wrote it (any case, surrounding spaces) to the canonical value, and says whether
// it was a valid one. The file's parser, the approval policy and the executor all go
// through them, so that "Strict ", "MANUAL" or "Docker" mean the same everywhere; what an
// invalid value becomes (a fallback with a warning, an error) is each caller's choice, and
// the fallback each normaliser returns is the one the file's parser applies.

// fold is how every enum value is compared: trimmed and lower-case.
func fold(v string) string { return strings.ToLower(strings.TrimSpace(v)) }

// NormalizeMode maps a mode value to [ModeStrict] or [ModeProject], trimmed and compared
// case-insensitively. Any other value, a blank one included, gives [ModeFallback] with ok
// false ([UnknownMode] words the warning): callers that give an empty value a meaning (the
// configured mode, the default) check for it first.
func NormalizeMode(m string) (mode string, ok bool) {
	switch v := fold(m); v {
	case ModeProject, ModeStrict:
		return v, true
	}
	return ModeFallback, false
}

// UnknownMode words what happens to an unknown mode value m given as what (a key such as
// "code_execution.mode", or "mode"): it names m, what it runs in instead and why, and the
// valid mode nearest to m when one is within edit distance 2.
func UnknownMode(what, m string) string {
	msg := fmt.Sprintf("unknown %s %q; falling back to %q, the sandbox, so that a typo never runs scripts without it (valid modes: %s)",
		what, m, ModeFallback, strings.Join(Modes, ", "))
	return msg + DidYouMeanMode(m)
}

// DidYouMeanMode is `; did you mean "strict"?` for a mode value m within edit distance 2 of
// a valid mode (the nearest), else "".
func DidYouMeanMode(m string) string {
	return didYouMean(strings.TrimSpace(m), Modes)
}

// DidYouMean is `; did you mean "x"?` for the name of names nearest to v within edit
// distance 2, else "".
func DidYouMean(v string, names []string) string { return didYouMean(v, names) }

// didYouMean is `; did you mean "x"?` for the name of names nearest to v within edit
// distance 2, else "".
func didYouMean(v string, names []string) string {
	if s := suggest(v, names); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// NormalizeSandbox maps a sandbox value to [SandboxNone] or [SandboxWasm], trimmed and
// compared case-insensitively; "" is none. Any other value gives [SandboxWasm] with ok
// false: a typo never runs a script outside the sandbox that was asked for.
func NormalizeSandbox(v string) (sandbox string, ok bool) {
	switch s := fold(v); s {
	case "", SandboxNone:
		return SandboxNone, true
	case SandboxWasm:
		return s, true
	}
	return SandboxWasm, false
}

// UnknownSandbox words what happens to an unknown sandbox value v given as what.
func UnknownSandbox(what, v string) string {
	msg := fmt.Sprintf("unknown %s %q; using %q, the sandbox, so that a typo never runs scripts outside it (valid values: %s)",
		what, v, SandboxWasm, strings.Join(Sandboxes, ", "))
	return msg + didYouMean(fold(v), Sandboxes)
}

// Kinds are the session kinds, in the order messages list them.
var Kinds = []string{KindCLI, KindGateway, KindAutomation}

// NormalizeKind maps a session kind to [KindCLI], [KindGateway] or [KindAutomation],
// trimmed and compared case-insensitively; "" is cli. Any other value gives [KindGateway],
// whose scripts are approved as a whole before they run (the stricter rule), with ok false.
func NormalizeKind(v string) (kind string, ok bool) {
	switch k := fold(v); k {
	case "":
		return KindCLI, true
	case KindCLI, KindGateway, KindAutomation:
		return k, true
	}
	return KindGateway, false
}

// UnknownKind words the error for an unknown session kind v given as what ("kind",
// "--kind"), with the valid kind nearest to v when one is within edit distance 2.
func UnknownKind(what, v string) string {
	return fmt.Sprintf("%s must be one of %s, not %q", what, strings.Join(Kinds, ", "), v) + didYouMean(fold(v), Kinds)
}

// NormalizeLandlock maps a code_execution.landlock value to [LandlockAuto] or
// [LandlockOff], trimmed and compared case-insensitively; "" is auto. Any other value gives
// [LandlockAuto], the safer value, with ok false.
func NormalizeLandlock(v string) (landlock string, ok bool) {
	switch s := fold(v); s {
	case "", LandlockAuto:
		return LandlockAuto, true
	case LandlockOff:
		return s, true
	}
	return LandlockAuto, false
}

// unknownLandlock words the warning of an unknown code_execution.landlock.
func unknownLandlock(key, v string) string {
	msg := fmt.Sprintf("unknown %s %q; using %q, the safer value (valid: %s, %s)", key, v, LandlockAuto, LandlockAuto, LandlockOff)
	return msg + didYouMean(fold(v), LandlockModes)
}

// NormalizeApprovalsMode maps an approvals.mode value to one of [ApprovalModes], trimmed and
// compared case-insensitively: "" and the former name "ask" are [ApprovalsManual]. Any
// other value gives [ApprovalsManual] with ok false, as in Hermes.
func NormalizeApprovalsMode(v string) (mode string, ok bool) {
	switch s := fold(v); s {
	case "", ApprovalsManual, "ask":
		return ApprovalsManual, true
	case ApprovalsSmart, ApprovalsOff, ApprovalsDeny:
		return s, true
	}
	return ApprovalsManual, false
}

// CronModes lists the approvals.cron_mode values, in the order warnings show them.
var CronModes = []string{CronModeDeny, CronModeApprove, CronModeAsk}

// cronApprove are Hermes's spellings of approve for approvals.cron_mode.
var cronApprove = []string{CronModeApprove, "off", "allow", "yes"}

// NormalizeCronMode maps an approvals.cron_mode value to one of [CronModes], trimmed and
// compared case-insensitively: "" and "manual" are [CronModeAsk], and Hermes's spellings
// off, allow and yes are [CronModeApprove]. Any other value gives [CronModeDeny] with ok
// false, as in Hermes.
func NormalizeCronMode(v string) (cron string, ok bool) {
	switch s := fold(v); {
	case s == "" || s == CronModeAsk || s == ApprovalsManual:
		return CronModeAsk, true
	case s == CronModeDeny:
		return CronModeDeny, true
	case slices.Contains(cronApprove, s):
		return CronModeApprove, true
	}
	return CronModeDeny, false
}

// NormalizeBackend maps a terminal.backend value to one of [Backends], trimmed and compared
// case-insensitively; "" is [BackendLocal]. Any other value is returned trimmed and
// lower-case with ok false: an unknown backend is an error, never a fallback, so that
// nothing meant to run elsewhere runs on this host.
func NormalizeBackend(v string) (backend string, ok bool) {
	s := fold(v)
	if s == "" {
		return BackendLocal, true
	}
	return s, slices.Contains(Backends, s)
}

// NormalizeProvider maps a web.search.provider value to one of [Providers], trimmed and
// compared case-insensitively; "" is no provider. Any other value is returned trimmed and
// lower-case with ok false (an error in the file).
func NormalizeProvider(v string) (provider string, ok bool) {
	s := fold(v)
	return s, s == "" || slices.Contains(Providers, s)
}
