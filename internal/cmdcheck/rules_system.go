package cmdcheck

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// systemRules: the machine, its services and processes, the firewall,
// history and cron.
var systemRules = map[string]rule{
	"shutdown": shutdownRule, "reboot": shutdownRule, "halt": shutdownRule, "poweroff": shutdownRule, "kexec": shutdownRule,
	"init": initRule, "telinit": initRule,
	"systemctl": systemctlRule,
	"service":   serviceRule, "rc-service": serviceRule,
	"kill":     killRule,
	"killall5": func(s *scan, _ *command) { s.add(reasonKillAll) },
	"killall":  func(s *scan, _ *command) { s.add(reasonKillByName) },
	"pkill":    pkillRule,
	"skill":    flag(reasonSignalByName), "snice": flag(reasonSignalByName),
	"fuser":     fuserRule,
	"loginctl":  loginctlRule,
	"launchctl": launchctlRule,
	"iptables":  iptablesRule, "ip6tables": iptablesRule, "iptables-legacy": iptablesRule, "iptables-nft": iptablesRule,
	"nft":     nftRule,
	"ufw":     ufwRule,
	"history": withShortFlag("c", reasonHistory),
	"crontab": withShortFlag("r", reasonCrontab),
}

func shutdownRule(s *scan, cmd *command) {
	if slices.Contains(cmd.args, "-c") || slices.Contains(cmd.args, "--help") {
		return
	}
	s.add(reasonShutdown)
}

func initRule(s *scan, cmd *command) {
	if len(cmd.args) > 0 && (cmd.args[0] == "0" || cmd.args[0] == "6") {
		s.add(reasonShutdown)
	}
}

func systemctlRule(s *scan, cmd *command) {
	pos := positional(cmd.args)
	if len(pos) == 0 {
		return
	}
	switch strings.ToLower(pos[0]) {
	case "reboot", "poweroff", "halt", "kexec", "soft-reboot":
		s.add(reasonShutdown)
	case "stop", "disable", "mask", "kill", "isolate", "restart", "try-restart", "reload-or-restart", "try-reload-or-restart", "condrestart", "force-reload":
		s.add(reasonService)
	}
}

func serviceRule(s *scan, cmd *command) {
	pos := positional(cmd.args)
	if len(pos) > 1 && (pos[1] == "stop" || pos[1] == "disable" || pos[1] == "restart") {
		s.add(reasonService)
	}
}

// killRule: kill -1 (every process the user may signal) and kill 1 (init;
// in a container, everything), whatever the signal; and kill $PPID (the
// executor that runs the command: what the command started would outlive
// its cleanup) or 0 (the process group). kill $! signals the job the line
// just started, which is its own.
func killRule(s *scan, cmd *command) {
	args := cmd.fields
	i := 0
	if i < len(args) {
		switch a := args[i].s; {
		case a == "-l" || a == "-L" || longOpt(a, "list", "table"):
			return
		case a == "-s" || a == "-n" || longOpt(a, "signal") && !strings.Contains(a, "="):
			i += 2
		case a == "--":
		case strings.HasPrefix(a, "-"):
			i++ // the signal
		}
	}
	for _, f := range args[min(i, len(args)):] {
		switch {
		case f.s == "-1" || f.s == "1":
			s.add(reasonKillAll)
		case f.s == "0" || f.s == "-0" || strings.Contains(f.s, "PPID"):
			s.add(reasonKillParent)
		}
	}
}

// lastJob reports whether f is $! (or "$!"), the process the line last
// started in the background.
func lastJob(f field) bool {
	w := f.word
	if w == nil || len(w.Parts) != 1 {
		return false
	}
	p := w.Parts[0]
	if dq, ok := p.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		p = dq.Parts[0]
	}
	pe, ok := p.(*syntax.ParamExp)
	return ok && pe.Param != nil && pe.Param.Value == "!" && !pe.Length && !pe.Excl && pe.Exp == nil && pe.Slice == nil && pe.Repl == nil && pe.Index == nil
}

// pkillRule: pkill signals every process whose name (or, with -f, whole
// command line: the executor's, another session's) matches a pattern;
// -9 leaves them no way out; -P PID signals a process's children (of the
// executor, they would escape cleanup).
func pkillRule(s *scan, cmd *command) {
	args := cmd.args
	for _, a := range args {
		if a == "--help" || a == "-V" || a == "--version" {
			return
		}
	}
	specific := false
	for i, a := range args {
		l := strings.ToLower(a)
		if l == "-9" || l == "-kill" || l == "-sigkill" || l == "--signal=9" || l == "--signal=kill" ||
			((l == "--signal" || l == "-s") && i+1 < len(args) && (args[i+1] == "9" || strings.EqualFold(args[i+1], "kill"))) {
			s.add(reasonKillByName)
			specific = true
		}
		if shortFlag(a, "P") || longOpt(a, "parent") || strings.Contains(a, "PPID") {
			s.add(reasonKillParent)
			specific = true
		}
	}
	if !specific {
		s.add(reasonSignalByName)
	}
}

// fuserRule: fuser -k kills every process using a file or mount.
func fuserRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if shortFlag(a, "k") || longOpt(a, "kill") {
			s.add(reasonSignalByName)
		}
	}
}

// loginctlRule: ending a user's or a session's processes (the executor's
// among them).
func loginctlRule(s *scan, cmd *command) {
	if pos := positional(cmd.args); len(pos) > 0 {
		switch strings.ToLower(pos[0]) {
		case "kill-user", "terminate-user", "kill-session", "terminate-session", "terminate-seat":
			s.add(reasonSignalByName)
		}
	}
}

// launchctlRule: stopping or unloading a macOS service (launchctl list
// and print only read).
func launchctlRule(s *scan, cmd *command) {
	if pos := positional(cmd.args); len(pos) > 0 {
		switch strings.ToLower(pos[0]) {
		case "stop", "kill", "unload", "bootout", "disable", "remove", "kickstart":
			s.add(reasonService)
		}
	}
}

func iptablesRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "-F" || longOpt(a, "flush", "delete-chain") || a == "-X" || (strings.HasPrefix(a, "-F") && len(a) > 2 && a[1] != '-') {
			s.add(reasonFirewall)
		}
	}
}

func nftRule(s *scan, cmd *command) {
	if len(cmd.args) >= 2 && cmd.args[0] == "flush" && cmd.args[1] == "ruleset" {
		s.add(reasonFirewall)
	}
}

func ufwRule(s *scan, cmd *command) {
	if pos := positional(cmd.args); len(pos) > 0 && (pos[0] == "disable" || pos[0] == "reset") {
		s.add(reasonFirewall)
	}
}
