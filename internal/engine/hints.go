package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

var (
	// reBadImport matches Python's error for a name the module does not
	// define: `from hermes_tools import x` (ImportError) and
	// `hermes_tools.x` (AttributeError).
	reBadImport     = regexp.MustCompile(`cannot import name '([^']+)' from 'hermes_tools'|module 'hermes_tools' has no attribute '([^']+)'`)
	reMissingModule = regexp.MustCompile(`No module named '([^']+)'`)
)

// explain adds to res, the result of req's run that ended in outcome
// with report (nil: none), the hint and warnings that say what went wrong
// and what to do: a common agent mistake (failureHint), a process limit,
// what strict mode's sandbox lacks, refused file accesses, the project's
// files a strict-mode script looked for, files left in the private dir.
// raised says whether the run's status is that of report's uncaught
// exception; broker served the run's tool calls.
func explain(res *Result, req Request, outcome Outcome, report *ExitReport, raised bool, broker *Broker) {
	exception := report != nil && report.Kind == "exception"
	if raised {
		mode := req.Mode
		if req.Embedded && req.Mode == config.ModeProject {
			mode = modeProjectEmbedded
		}
		res.Hint = failureHint(mode, report, broker.Enabled())
	}
	if (res.Status == config.StatusError || res.Status == config.StatusTimeout) && res.Hint == "" {
		res.Hint = limitHint(outcome, req.ProcessLimits)
	}
	if res.Status == config.StatusError && res.Hint == "" && exception {
		res.Hint = strictHint(req, report)
	}
	if len(outcome.Refused) > 0 {
		res.Warning = strings.TrimSpace(res.Warning + " " + refusedWarning(outcome.Refused, outcome.RefusedTotal))
		if res.Hint == "" && exception && report.Type == "PermissionError" {
			res.Hint = "The sandbox's file-safety rules refused it: " + outcome.Refused[len(outcome.Refused)-1]
		}
	}
	if w := unseenWarning(req, outcome.Missing, broker.Notes()); w != "" {
		switch {
		case res.Status == config.StatusSuccess:
			res.Warning = strings.TrimSpace(res.Warning + " " + w)
		case res.Hint == "":
			res.Hint = w
		}
	}
	if l := outcome.Left; l != nil && len(l.Files) > 0 {
		res.DiscardedFiles = l.Files
		res.DiscardedFilesOmitted = l.More
		res.Warning = strings.TrimSpace(res.Warning + " " + leftWarning(l))
	}
}

// availableList is the tool set enabled (nil: all seven) sorted and
// comma-joined, or "none".
func availableList(enabled []string) string {
	if enabled == nil {
		enabled = toolNames
	}
	if len(enabled) == 0 {
		return "none"
	}
	sorted := slices.Clone(enabled)
	slices.Sort(sorted)
	return strings.Join(sorted, ", ")
}

// helperNames are the helpers hermes_tools always defines.
var helperNames = []string{"json_parse", "shell_quote", "retry"}

// badImportHint is the hint for a name that hermes_tools does not define
// (a tool outside the execution's tool set, or no tool at all), Hermes's
// texts: for a helper, that the module found is not the generated one;
// otherwise which tools can be imported here.
func badImportHint(name string, enabled []string) string {
	if slices.Contains(helperNames, name) {
		return "Import helpers with `from hermes_tools import " + name + "`. If that import failed, the generated module may be stale or another hermes_tools may be first on sys.path. Check hermes_tools.__file__ and retry with reset=true."
	}
	return "'" + name + "' is not available inside the execute_code sandbox. Importable tools here: " + availableList(enabled) + ". For anything else, use the normal tool call instead of execute_code."
}

// dictAsString matches error messages of code that treats a tool result (a
// dict) as a string.
var dictAsString = []string{
	"'dict' object has no attribute",
	"not dict",
	"(not \"dict\")",
	"'dict' and 'str'",
	"'str' and 'dict'",
	"got 'dict'",
	"'dict' object is not callable",
}

// removedIn313 are the standard library modules PEP 594 removed in Python
// 3.13 that scripts still import, with what to use instead.
var removedIn313 = map[string]string{
	"imghdr":    "read the file's first bytes and compare them with the format's signature (b'\\x89PNG', b'\\xff\\xd8\\xff' for JPEG, b'GIF8')",
	"cgi":       "parse query strings with urllib.parse.parse_qs and headers with email.message.Message",
	"cgitb":     "print tracebacks with the traceback module",
	"pipes":     "quote shell words with shlex.quote",
	"crypt":     "hash passwords with hashlib (pbkdf2_hmac, scrypt is not linked in)",
	"telnetlib": "the sandbox has no network in any case; use web_extract for web pages",
	"nntplib":   "the sandbox has no network in any case; use web_extract for web pages",
	"mailcap":   "use mimetypes",
	"sndhdr":    "read the file's first bytes (b'RIFF' and b'WAVE' for WAV) or use the wave module",
	"audioop":   "compute on the samples with array or struct",
	"aifc":      "use the wave module for WAV files",
	"sunau":     "use the wave module for WAV files",
	"chunk":     "read the chunk headers with struct",
	"uu":        "use base64",
	"xdrlib":    "pack and unpack with struct (big-endian, '>')",
	"asyncore":  "use asyncio",
	"asynchat":  "use asyncio",
	"smtpd":     "the sandbox has no network in any case",
	"imp":       "use importlib",
	"distutils": "use sysconfig or shutil",
}

// failureHint returns a one-line hint for an uncaught exception that is a common
// agent mistake, or "". enabled is the execution's tool set (nil: all).
// modeProjectEmbedded is failureHint's mode for a project-mode run that
// fell back to the embedded interpreter.
const modeProjectEmbedded = "project (embedded interpreter)"

func failureHint(mode string, rep *ExitReport, enabled []string) string {
	if rep == nil || rep.Kind != "exception" {
		return ""
	}
	msg := rep.Message
	switch {
	case (rep.Type == "ImportError" || rep.Type == "AttributeError") && reBadImport.MatchString(msg):
		m := reBadImport.FindStringSubmatch(msg)
		return badImportHint(m[1]+m[2], enabled)
	case rep.Type == "ModuleNotFoundError" && reMissingModule.MatchString(msg):
		name := reMissingModule.FindStringSubmatch(msg)[1]
		if instead, ok := removedIn313[name]; ok && mode != config.ModeProject {
			return "Module " + name + " was removed from Python's standard library in 3.13 (PEP 594), and the WASI interpreter is CPython 3.13: " + instead + "."
		}
		if mode == config.ModeStrict {
			return "Module " + name + " is not available in strict mode, which runs a sandboxed CPython with the standard library only; use project mode for installed packages, or terminal() for host commands."
		}
		if mode == modeProjectEmbedded {
			return "Module " + name + " is not available in the embedded WASI CPython this project-mode run used (sandbox: wasm, or no python on this host): it loads the standard library and the pure-Python packages of the project's python (its virtualenv or site-packages dirs) only. Install the package there, or run with sandbox: none and the project's python (Python 3.8+) for compiled ones, or use terminal() for host commands."
		}
		return "Module " + name + " is not installed in the interpreter running this script; install it in the project's environment or avoid it."
	case rep.Type == "RuntimeError" && strings.Contains(msg, "can't start new thread") && mode == config.ModeStrict:
		return "Strict mode's WASI interpreter has no threads: call tools one after another (each call is fast), or use project mode for threads."
	case rep.Type == "RuntimeError" && strings.Contains(msg, "can't start new thread") && mode == modeProjectEmbedded:
		return "With no python on this host, this project-mode run used the embedded WASI CPython, which has no threads: call tools one after another (each call is fast), or install Python 3.8+ for threads."
	case mode == config.ModeStrict && strings.Contains(msg, "No space left on device"):
		// The strict engine's disk budget: the jail fails writes, and new
		// files and directories, past it with ENOSPC (errno 51 in WASI, 28 on
		// Linux; the text is the same).
		return "The script used up its disk space: strict mode caps what a script stores in its dir (file data, plus 4 KiB per file or directory) at code_execution.disk_limit_mb (default 1024 MiB, kept across a session's calls). Delete files or directories it no longer needs, write less, or raise the limit."
	case rep.Type == "EOFError":
		return "Scripts run without input: stdin is empty, so input() and sys.stdin.read() get nothing. Put the data in the script or read it from a file."
	case rep.Type == "TypeError" || rep.Type == "AttributeError":
		for _, s := range dictAsString {
			if strings.Contains(msg, s) {
				return "Tool functions return dicts, not strings: use result[\"content\"] (read_file), result[\"output\"] (terminal), result[\"matches\"] (search_files)."
			}
		}
	}
	return ""
}

// limitHint is the hint for a failed run that hit a limit of its
// processes (project mode, where cgroups enforce them), or "".
func limitHint(o Outcome, l ProcessLimits) string {
	switch {
	case o.OutOfMemory:
		return fmt.Sprintf("The script ran out of memory: project mode caps the memory of a run's processes together (the interpreter and every process it starts) at code_execution.project_memory_limit_mb (%d MiB here), and past it the kernel's OOM killer ends one of them. Use less memory (process the data in chunks, drop what is no longer needed) or raise the limit.", l.MemoryMB)
	case o.ProcessLimitHit:
		return fmt.Sprintf("The script hit its process limit: project mode caps how many processes and threads a run may have at once at code_execution.process_limit (%d here); past it, starting another fails with \"Resource temporarily unavailable\" (BlockingIOError, EAGAIN). Wait for processes to end before starting more, use a pool of fixed size, or raise the limit.", l.Processes)
	}
	return ""
}

// reNotFound matches the file name of an OSError's message for a missing
// file, "[Errno N] No such file or directory: 'name'" (the first name of
// two, for rename and link), as repr() writes it.
var reNotFound = regexp.MustCompile(`No such file or directory: ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")`)

// strictHint returns a hint for an uncaught exception that comes from what
// strict mode's sandbox lacks, or "": a FileNotFoundError on a path that
// exists in the working dir (the script sees only its private dir), or a
// MemoryError (the memory cap).
func strictHint(req Request, rep *ExitReport) string {
	embedded := req.Embedded && req.Mode == config.ModeProject
	if req.Mode != config.ModeStrict && !embedded {
		return ""
	}
	switch rep.Type {
	case "MemoryError":
		limit := req.MemoryLimitMB
		if limit <= 0 {
			limit = config.DefaultMemoryLimitMB
		}
		where := "strict mode caps the interpreter's memory"
		if embedded {
			where = "the embedded interpreter (this project-mode run's, with no python on this host) has its memory capped"
		}
		return fmt.Sprintf("The script ran out of memory: %s at code_execution.memory_limit_mb (%d MiB here). Use less memory (process the data in chunks, drop what is no longer needed) or raise the limit.", where, limit)
	case "FileNotFoundError":
		if embedded {
			return "" // its cwd is the working dir: the file is missing there too
		}
		m := reNotFound.FindStringSubmatch(rep.Message)
		if m == nil {
			return ""
		}
		name, ok := pyStringLiteral(m[1])
		if !ok {
			return ""
		}
		kind := inWorkdir(req.Workdir, name)
		if kind == "" {
			return ""
		}
		how := "read it with read_file()"
		if kind == "directory" {
			how = "list or search it with search_files()"
		}
		return "The " + kind + " " + m[1] + " is in the working dir, but strict mode runs the script in a private dir that holds none of the project's files: " + how + " from hermes_tools, or use project mode (with sandbox: wasm to keep the sandbox)."
	}
	return ""
}

// inWorkdir reports what the guest path name (relative to the script's
// cwd, or absolute) is in the working dir on the host: "file",
// "directory", or "" when it is not there (or names a path outside it).
func inWorkdir(workdir, name string) string {
	if workdir == "" || name == "" {
		return ""
	}
	var path string
	switch {
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		// An absolute path the script learnt on the host (terminal("pwd")).
		p := filepath.Clean(filepath.FromSlash(name))
		rel, err := filepath.Rel(workdir, p)
		if !filepath.IsAbs(p) || err != nil || !filepath.IsLocal(rel) && rel != "." {
			return ""
		}
		path = p
	default:
		rel := filepath.FromSlash(name)
		if !filepath.IsLocal(rel) {
			return ""
		}
		path = filepath.Join(workdir, rel)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return "directory"
	default:
		return "file"
	}
}

// pyStringLiteral decodes lit, a str's repr() in single or double quotes,
// when its only escapes are of a backslash or a quote (and \t, \n, \r);
// ok is false otherwise.
func pyStringLiteral(lit string) (string, bool) {
	if len(lit) < 2 {
		return "", false
	}
	var b strings.Builder
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(body) {
			return "", false
		}
		switch body[i] {
		case '\\', '\'', '"':
			b.WriteByte(body[i])
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// leftWarning is the warning of a strict-mode result that lists the files
// the script left in its private dir (see LeftFiles): how many, the first
// few names, and how to keep them.
func leftWarning(l *LeftFiles) string {
	n := len(l.Files) + l.More
	names := make([]string, 0, 3)
	for _, f := range l.Files[:min(3, len(l.Files))] {
		names = append(names, f.Path)
	}
	list := strings.Join(names, ", ")
	if rest := n - len(names); rest > 0 {
		list += fmt.Sprintf(" and %d more", rest)
	}
	files := "files"
	if n == 1 {
		files = "file"
	}
	what := fmt.Sprintf("The script left %d %s in strict mode's private dir, which is discarded after the run (see discarded_files): %s.", n, files, list)
	if l.Kernel {
		what = fmt.Sprintf("This call wrote %d %s in the session kernel's private dir, which later calls of this kernel see but which is discarded when the kernel ends (see discarded_files): %s.", n, files, list)
	}
	return what + " To keep output, write it into the working dir with write_file() from hermes_tools (text), or use project mode (with sandbox: wasm to keep the sandbox)."
}

// unseenWarning is the warning of a strict-mode run that looked for the
// project's files in its private dir: paths it did not find there that the
// working dir has (missing), or a listing of the private dir's root
// (NoteListedPrivateDir) while the working dir has files. "" otherwise.
func unseenWarning(req Request, missing, notes []string) string {
	if req.Mode != config.ModeStrict || req.Workdir == "" {
		return ""
	}
	var there []string
	for _, p := range missing {
		if _, err := os.Stat(filepath.Join(req.Workdir, filepath.FromSlash(p))); err == nil {
			there = append(there, p)
		}
	}
	listed := false
	if slices.Contains(notes, NoteListedPrivateDir) {
		if ents, err := os.ReadDir(req.Workdir); err == nil && len(ents) > 0 {
			listed = true
		}
	}
	if len(there) == 0 && !listed {
		return ""
	}
	var what string
	switch {
	case len(there) == 1:
		what = fmt.Sprintf("The script looked for %s, which is in the working dir but not in strict mode's private dir", there[0])
	case len(there) > 1:
		what = fmt.Sprintf("The script looked for %s and %d more, which are in the working dir but not in strict mode's private dir", there[0], len(there)-1)
	default:
		what = "The script listed strict mode's private dir, which holds only what the script itself wrote, not the working dir's files"
	}
	return what + ": strict mode does not see the project's files. Read them with read_file() or search_files() from hermes_tools, " +
		"or run in project mode (with sandbox: wasm to keep the sandbox)."
}

// refusedWarning is the result's warning about the file accesses the
// sandboxed project mode refused (the script saw PermissionError): how
// many, and the distinct refusals (the first few).
func refusedWarning(refused []string, total int) string {
	w := fmt.Sprintf("The sandbox refused %d file access", total)
	if total != 1 {
		w += "es"
	}
	return w + " by the file tools' rules (the script got PermissionError): " + strings.Join(refused, " | ")
}
