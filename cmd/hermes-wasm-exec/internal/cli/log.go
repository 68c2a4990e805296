package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// ExecutorLogger is the executor's logger for --log-level level ("info"
// or "debug"): warning and error events are printed at every level as
// "hermes-wasm-exec: warning: <line>", as the config warnings are; at
// debug the other events are printed as "debug: <line>". Each event's line
// is the sentence the CLI has always printed for it (see eventLine), or
// "execute_code: <message> key=value ..." for the others.
func ExecutorLogger(level string, stderr io.Writer) *slog.Logger {
	return slog.New(lineHandler{debug: level == "debug", w: stderr})
}

// lineHandler prints the executor's events as lines (ExecutorLogger).
type lineHandler struct {
	debug bool
	w     io.Writer
	attrs []slog.Attr // from WithAttrs
}

// Enabled implements slog.Handler.
func (h lineHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn || h.debug
}

// Handle implements slog.Handler: one Fprintf per event, so that a line
// is not split by another writer of a shared stderr.
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	line := eventLine(r.Message, attrs)
	if r.Level >= slog.LevelWarn {
		_, err := fmt.Fprintf(h.w, "hermes-wasm-exec: warning: %s\n", line)
		return err
	}
	_, err := fmt.Fprintf(h.w, "debug: %s\n", line)
	return err
}

// WithAttrs implements slog.Handler.
func (h lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = slices.Concat(h.attrs, as)
	return h
}

// WithGroup implements slog.Handler; groups are not shown.
func (h lineHandler) WithGroup(string) slog.Handler { return h }

// eventLine is the line of an executor event (runtime/executor's package
// documentation lists them): the sentence the CLI printed for it before
// events had attributes, rebuilt from the attributes, or formatEvent's
// form for the others.
func eventLine(msg string, attrs []slog.Attr) string {
	a := func(key string) slog.Value {
		for _, at := range attrs {
			if at.Key == key {
				return at.Value.Resolve()
			}
		}
		return slog.Value{}
	}
	str := func(key string) string { return a(key).String() }
	names := func() any { return a("names").Any() }
	switch msg {
	case "unknown mode, falling back to strict":
		return "execute_code: " + config.UnknownMode("mode", str("mode"))
	case "unknown sandbox, using wasm":
		return "execute_code: " + config.UnknownSandbox("sandbox", str("sandbox"))
	case "passthrough refused":
		if str("source") == "terminal.client_env" {
			return fmt.Sprintf("execute_code: refusing to pass host-managed credentials %v to a backend's client", names())
		}
		return fmt.Sprintf("execute_code: refusing to pass through host-managed credentials %v", names())
	case "dropped HERMES_* variables":
		if n, ok := names().([]string); ok {
			return engine.DroppedHermesLine(n)
		}
	case "python skipped":
		return "execute_code: skipped python " + str("candidate")
	case "embedded interpreter fallback":
		return "execute_code: " + native.Choice{}.Describe()
	case "remote kernel unavailable":
		return fmt.Sprintf("execute_code: the session kernel of %q could not start on the %s backend (%s); running the call as a standalone script", str("session"), str("backend"), str("error"))
	case "no kernel slot":
		return fmt.Sprintf("execute_code: every session kernel stayed busy for %s (max_session_kernels is %s); running the call of %q as a standalone script", str("timeout"), str("max_session_kernels"), str("session"))
	case "warm pool failed":
		return "warm pool: " + str("error")
	case "kernel evicted":
		return fmt.Sprintf("execute_code: evicting the kernel of session %q (least recently used; max_session_kernels is %s)", str("session"), str("max_session_kernels"))
	case "idle kernel closed":
		return fmt.Sprintf("execute_code: closing the kernel of session %q (idle for %s)", str("session"), str("kernel_idle_timeout"))
	case "skill environment variable refused":
		if str("reason") == "invalid name" {
			return fmt.Sprintf("execute_code: refusing invalid environment variable names %q registered by a skill", names())
		}
		return fmt.Sprintf("execute_code: refusing to pass through host-managed credentials %v registered by a skill", names())
	}
	return formatEvent(msg, attrs)
}

// formatEvent renders an event as "execute_code: msg key=value ...",
// quoting values that are empty or contain spaces, quotes or "=".
func formatEvent(msg string, attrs []slog.Attr) string {
	var b strings.Builder
	b.WriteString("execute_code: ")
	b.WriteString(msg)
	for _, a := range attrs {
		v := a.Value.Resolve().String()
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + a.Key + "=" + v)
	}
	return b.String()
}
