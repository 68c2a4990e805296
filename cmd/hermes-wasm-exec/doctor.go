package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// doctorCommand is `doctor`'s help and flags.
var doctorCommand = &cli.Command{
	Name: "doctor",
	Summary: `Shows what a run would use: the interpreter, the caches, the configuration in
effect, project mode's python, the session store. Exits 1 when strict mode could not
run, 2 when the configuration is invalid.`,
	Examples: []string{"hermes-wasm-exec doctor", "hermes-wasm-exec doctor --config"},
}

// doctorCmd prints what a run would use: the interpreter asset, the caches,
// the configuration in effect and project mode's interpreter. With
// --config (its FILE may be left out for the default file) it also lists
// the keys of the file that were used, with their effective values, and
// those that were ignored. It exits 1 when strict mode could not run, 2
// when the configuration is invalid.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	c := doctorCommand
	fs := c.FlagSet()
	cfgPath := fs.String("config", "", "`[FILE]` the config file (default: $HERMES_HOME/config.yaml); given, even without FILE, doctor also lists the keys of the file it used, with their values, and those it ignored")
	args, report := configFlag(args)
	pos, code, ok := c.Parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if code := c.NoArgs(pos, stderr); code != cli.ExitOK {
		return code
	}
	code = cli.ExitOK
	fmt.Fprintf(stdout, "%s\n\n", versionString())

	cfg, err := config.Load(*cfgPath)
	ex := executor.New(executor.Options{Config: configOrDefault(cfg, err)})
	defer ex.Close(context.Background())
	d := ex.Diagnose(context.Background())

	fmt.Fprintln(stdout, "strict-mode interpreter:")
	fmt.Fprintf(stdout, "  build     %s\n", d.Strict.Description)
	fmt.Fprintf(stdout, "  recipe    %s (pyodide-assets/cpython)\n", d.Strict.RecipeSHA256[:16])
	if d.Strict.Source != "embedded" {
		fmt.Fprintf(stdout, "  source    %s (HERMES_WASM_INTERPRETER)\n", d.Strict.Source)
	} else {
		fmt.Fprintln(stdout, "  source    embedded in this binary")
	}
	fmt.Fprintf(stdout, "  sha256    %s (python.wasm, pinned)\n", d.Strict.SHA256)
	fmt.Fprintf(stdout, "  sha256    %s (%s, pinned)\n", d.Strict.StdlibSHA256, pyodideassets.StdlibName)
	if d.Strict.Err != nil {
		fmt.Fprintf(stdout, "  status    NOT USABLE: %v\n", d.Strict.Err)
		code = cli.ExitFailed
	} else {
		fmt.Fprintf(stdout, "  status    ok, %d + %d bytes, hashes verified\n", d.Strict.Size, d.Strict.StdlibSize)
	}
	switch {
	case d.Strict.Snapshot == "":
	case d.Strict.SnapshotSize > 0:
		fmt.Fprintf(stdout, "  snapshot  %s (%.1f MB; runs start from it)\n", d.Strict.Snapshot, float64(d.Strict.SnapshotSize)/1e6)
	default:
		fmt.Fprintf(stdout, "  snapshot  %s (not made yet: the first strict run makes it)\n", d.Strict.Snapshot)
	}

	home := config.HermesHome()
	fmt.Fprintln(stdout, "\npaths:")
	fmt.Fprintf(stdout, "  HERMES_HOME        %s\n", home)
	fmt.Fprintf(stdout, "  compile cache      %s\n", d.CacheDir)
	fmt.Fprintf(stdout, "  stdout spill files %s\n", d.SpillDir)

	fmt.Fprintln(stdout, "\nconfig in effect:")
	if err != nil {
		fmt.Fprintf(stdout, "  ERROR: %v\n", err)
		code = cli.ExitUsage
	} else {
		src := cfg.Source
		if src == "" {
			src = "defaults (no config file)"
		}
		fmt.Fprintf(stdout, "  source    %s\n", src)
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stdout, "  warning   %s\n", w)
		}
		out, _ := yaml.Marshal(inEffect(cfg))
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
		if v, p := cfg.Web.Search.APIKeyEnv, cfg.Web.Search.Provider; v != "" {
			switch _, keyed := config.DefaultAPIKeyEnv[p]; {
			case !keyed && p != "":
				// searxng takes no key: a variable named for it is unused.
				fmt.Fprintf(stdout, "  web search key: none needed (%s takes no key; $%s is not read)\n", p, v)
			case !keyed:
			case os.Getenv(v) == "":
				fmt.Fprintf(stdout, "  web search key: $%s is NOT set: web_search (%s) will fail until it is (read by the host only, never passed to scripts)\n", v, p)
			default:
				fmt.Fprintf(stdout, "  web search key: $%s is set (read by the host only, never passed to scripts)\n", v)
			}
		}
		if report {
			configReport(stdout, cfg)
		}
	}

	fmt.Fprintln(stdout, "\nproject-mode interpreter:")
	for _, s := range d.Project.Choice.Skipped {
		fmt.Fprintf(stdout, "  skipped   %s\n", s)
	}
	fmt.Fprintf(stdout, "  uses      %s\n", d.Project.Choice.Describe())
	if d.Project.Sandbox == config.SandboxWasm {
		fmt.Fprintf(stdout, "  sandbox   wasm: project-mode scripts run in the embedded WASI CPython over the working dir (code_execution.sandbox)\n")
		if len(d.Project.PackageDirs) == 0 {
			fmt.Fprintf(stdout, "  packages  none found: scripts import the standard library only\n")
		}
		for _, p := range d.Project.PackageDirs {
			fmt.Fprintf(stdout, "  packages  %s (read-only, pure-Python packages only)\n", p)
		}
	} else {
		fmt.Fprintf(stdout, "  sandbox   none: project-mode scripts run with the host's python (code_execution.sandbox: wasm runs them sandboxed)\n")
	}
	fmt.Fprintf(stdout, "  tools     over %s, authenticated per run by HERMES_RPC_TOKEN\n", map[string]string{
		native.TransportUnix: "a Unix socket in the run's private dir",
		native.TransportTCP:  "loopback TCP (127.0.0.1)",
	}[d.Project.Transport])

	fmt.Fprintln(stdout, "\nsession store (durable session kernels):")
	ss := d.SessionStore
	switch {
	case ss.Spec == "":
		fmt.Fprintln(stdout, "  store     off: evicted, idle and shut-down kernels are closed (code_execution.session_store keeps them)")
	case ss.Err != nil:
		fmt.Fprintf(stdout, "  store     %s\n  status    NOT USABLE: %v; kernels are closed, not kept\n", ss.Spec, ss.Err)
		code = cli.ExitFailed
	default:
		fmt.Fprintf(stdout, "  store     %s\n", ss.Spec)
		if ss.UsageErr != nil {
			fmt.Fprintf(stdout, "  status    ok, but its images could not be counted: %v\n", ss.UsageErr)
		} else {
			fmt.Fprintf(stdout, "  status    ok, %d suspended kernel images, %.1f MB\n", ss.Images, float64(ss.Bytes)/1e6)
		}
		if ss.Encrypted {
			fmt.Fprintf(stdout, "  encrypted yes, AES-256-GCM with $%s\n", sessionstore.KeyEnv)
		} else {
			fmt.Fprintf(stdout, "  encrypted no: set $%s (32 bytes, e.g. `openssl rand -hex 32`) to encrypt images at rest\n", sessionstore.KeyEnv)
		}
		ce := cfg.CodeExecution
		fmt.Fprintf(stdout, "  policy    checkpoint %s, compression %s, lease %d s, images expire after %s unwritten, at most %d MiB per session\n",
			ce.SessionCheckpoint, ce.SessionStoreCompression, ce.SessionLease, ttlText(ce.SessionTTL), ce.SessionStoreMaxMB)
	}

	fmt.Fprintln(stdout, "\nprocesses a run starts (the project-mode child, terminal commands):")
	fmt.Fprintf(stdout, "  cgroups   %s\n", d.Cgroups.Detail)
	fmt.Fprintf(stdout, "  memory    project_memory_limit_mb: %s\n", d.Cgroups.Memory)
	fmt.Fprintf(stdout, "  processes process_limit: %s\n", d.Cgroups.Processes)
	fmt.Fprintf(stdout, "  landlock  %s\n", d.Landlock)
	for _, p := range d.Protected {
		fmt.Fprintf(stdout, "  protects  %s\n", p)
	}
	return code
}

// inEffect is the configuration as doctor shows it, section by section:
// every key of config.Settings that applies to the backend in use, with
// its value in effect (docker_env's names only: its values may be
// secrets).
func inEffect(cfg config.Config) map[string]any {
	root := map[string]any{}
	for _, s := range config.Settings() {
		if !s.Applies(cfg) {
			continue
		}
		m := root
		path := strings.Split(s.Path, ".")
		for _, name := range path[:len(path)-1] {
			sub, ok := m[name].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[name] = sub
			}
			m = sub
		}
		m[path[len(path)-1]] = s.Value(cfg)
	}
	return root
}

// configFlag makes --config's value optional: a --config (or -config)
// that ends args or is followed by another flag becomes --config= (the
// default file). report says whether --config was given at all.
func configFlag(args []string) (out []string, report bool) {
	out = make([]string, 0, len(args))
	for i, a := range args {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "--" || name != "config" {
			out = append(out, a)
			continue
		}
		report = true
		if !hasValue && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			a = "--config="
		}
		out = append(out, a)
	}
	return out, report
}

// configReport prints which keys of the configuration file were used,
// with their effective values, and which were ignored.
func configReport(w io.Writer, cfg config.Config) {
	if tz := cfg.Timezone; tz != "" {
		fmt.Fprintf(w, "  TZ for scripts and terminal commands: %s (from %s)\n", tz, cfg.TimezoneSource)
	}
	if cfg.Source == "" {
		fmt.Fprintln(w, "  keys used: none (no config file: every setting is its default)")
		return
	}
	line := func(k config.Key, text string) {
		fmt.Fprintf(w, "    line %-5d %s\n", k.Line, text)
	}
	if len(cfg.Used) == 0 {
		fmt.Fprintln(w, "  keys used: none")
	} else {
		fmt.Fprintln(w, "  keys used (effective values):")
		for _, k := range cfg.Used {
			text := k.Path + " = " + k.Value
			if k.Note != "" {
				text += " (" + k.Note + ")"
			}
			line(k, text)
		}
	}
	if len(cfg.Ignored) == 0 {
		fmt.Fprintln(w, "  keys ignored: none")
	} else {
		fmt.Fprintln(w, "  keys ignored (Hermes settings and unknown keys, not used by hermes-wasm-exec):")
		for _, k := range cfg.Ignored {
			text := k.Path
			if k.Note != "" {
				text += ": " + k.Note
			}
			line(k, text)
		}
	}
	for _, n := range cfg.Notes {
		fmt.Fprintf(w, "  note      %s\n", n)
	}
}

// configOrDefault is the configuration doctor reports on: the loaded one,
// or the defaults when it did not load (doctor says why).
func configOrDefault(cfg config.Config, err error) *config.Config {
	if err != nil {
		d := config.Default()
		return &d
	}
	return &cfg
}

// ttlText is code_execution.session_ttl for a reader.
func ttlText(seconds int) string {
	switch {
	case seconds <= 0:
		return "never"
	case seconds%86400 == 0:
		return fmt.Sprintf("%d d", seconds/86400)
	case seconds%3600 == 0:
		return fmt.Sprintf("%d h", seconds/3600)
	}
	return fmt.Sprintf("%d s", seconds)
}
