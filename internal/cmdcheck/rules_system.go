package cmdcheck

import (
	"slices"
	"strings"
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
	"iptables": iptablesRule, "ip6tables": iptablesRule, "iptables-legacy": iptablesRule, "iptables-nft": iptablesRule,
	"nft":     nftRule,
	"ufw":     ufwRule,
	"history": historyRule,
	"crontab": crontabRule,
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
	case "stop", "disable", "mask", "kill", "isolate":
		s.add(reasonService)
	}
}

func serviceRule(s *scan, cmd *command) {
	pos := positional(cmd.args)
	if len(pos) > 1 && (pos[1] == "stop" || pos[1] == "disable") {
		s.add(reasonService)
	}
}

// killRule: kill -1 (every process the user may signal), whatever the
// signal; and kill $PPID (the executor that runs the command: what the
// command started would outlive its cleanup) or 0 (the process group).
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
		case f.s == "-1":
			s.add(reasonKillAll)
		case f.s == "0" || f.s == "-0" || strings.Contains(f.s, "PPID"):
			s.add(reasonKillParent)
		}
	}
}

// pkillRule: pkill -9 (by name, with no way out), and pkill -P PID (the
// children of a process: of the executor, they would escape cleanup).
func pkillRule(s *scan, cmd *command) {
	args := cmd.args
	for i, a := range args {
		l := strings.ToLower(a)
		if l == "-9" || l == "-kill" || l == "-sigkill" || l == "--signal=9" || l == "--signal=kill" ||
			((l == "--signal" || l == "-s") && i+1 < len(args) && (args[i+1] == "9" || strings.EqualFold(args[i+1], "kill"))) {
			s.add(reasonKillByName)
		}
		if shortFlag(a, "P") || longOpt(a, "parent") || strings.Contains(a, "PPID") {
			s.add(reasonKillParent)
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

func historyRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if shortFlag(a, "c") {
			s.add(reasonHistory)
		}
	}
}

func crontabRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if shortFlag(a, "r") {
			s.add(reasonCrontab)
		}
	}
}
