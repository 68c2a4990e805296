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
// signal.
func killRule(s *scan, cmd *command) {
	args := cmd.args
	i := 0
	if i < len(args) {
		switch a := args[i]; {
		case a == "-l" || a == "-L":
			return
		case a == "-s" || a == "-n":
			i += 2
		case a == "--":
		case strings.HasPrefix(a, "-"):
			i++ // the signal
		}
	}
	for _, a := range args[min(i, len(args)):] {
		if a == "-1" {
			s.add(reasonKillAll)
		}
	}
}

func pkillRule(s *scan, cmd *command) {
	args := cmd.args
	for i, a := range args {
		l := strings.ToLower(a)
		if l == "-9" || l == "-kill" || l == "-sigkill" || l == "--signal=9" || l == "--signal=kill" ||
			((l == "--signal" || l == "-s") && i+1 < len(args) && (args[i+1] == "9" || strings.EqualFold(args[i+1], "kill"))) {
			s.add(reasonKillByName)
		}
	}
}

func iptablesRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "-F" || a == "--flush" || a == "-X" || a == "--delete-chain" || (strings.HasPrefix(a, "-F") && len(a) > 2 && a[1] != '-') {
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
