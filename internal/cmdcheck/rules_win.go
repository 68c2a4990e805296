package cmdcheck

import (
	"slices"
	"strings"
)

// The reasons only the Windows rules give (the others are shared with the
// POSIX rules where the meaning is the same: a recursive delete is
// reasonRecursiveDelete whether rm -r or rd /s does it).
const (
	reasonEncoded     = "runs an encoded command that cannot be read (powershell -EncodedCommand)"
	reasonRegistry    = "changes the system registry (reg delete, reg add/import to HKLM)"
	reasonACL         = "recursive ownership or permission change (takeown /r, icacls /t)"
	reasonBoot        = "changes the boot configuration (bcdedit)"
	reasonShadows     = "deletes shadow copies or backups (vssadmin delete shadows)"
	reasonWipe        = "overwrites free disk space (cipher /w)"
	reasonEventLogs   = "clears the system event logs (wevtutil cl, Clear-EventLog)"
	reasonPipedDelete = "deletes the items piped to it (... | Remove-Item)"
)

// winRule checks a Windows program's arguments; in is what the program
// reads on stdin.
type winRule func(w *win, args []carg, in stageInput)

// winRules maps a Windows program (winName) to its rule. It is filled in
// init because some rules run the rules again (cmd /c, start, powershell).
var winRules map[string]winRule

func init() {
	winRules = map[string]winRule{
		"rd": rdRule, "rmdir": rdRule,
		"del": delRule, "erase": delRule,
		"format": always(reasonFormat), "diskpart": always(reasonFormat),
		"shutdown": winShutdownRule,
		"runas":    runasRule, "sudo": sudoRule, "psexec": sudoRule, "psexec64": sudoRule,
		"takeown": takeownRule, "icacls": icaclsRule, "cacls": icaclsRule,
		"reg": regRule, "regedit": regeditRule,
		"taskkill": taskkillRule, "wmic": wmicRule,
		"bcdedit": bcdeditRule, "bootrec": always(reasonBoot), "bcdboot": always(reasonBoot),
		"vssadmin": subcommand(reasonShadows, "delete", "resize"), // shadows, shadowstorage
		"wbadmin":  subcommand(reasonShadows, "delete"),           // catalog, backup, systemstatebackup
		"cipher":   cipherRule,
		"wevtutil": subcommand(reasonEventLogs, "cl", "clear-log"),
		"net":      subcommand(reasonService, "stop"), "net1": subcommand(reasonService, "stop"), "sc": scRule,
		"netsh": netshRule,
		"mshta": remoteArgRule, "regsvr32": remoteArgRule, "rundll32": remoteArgRule, "msiexec": remoteArgRule,
		"cmd": cmdRule, "start": startRule, "call": callRule, "wsl": wslRule,
		"powershell": powershellRule, "pwsh": powershellRule, "powershell_ise": powershellRule,
	}
}

// subcommand flags the program when its first argument is one of names,
// in any case (vssadmin delete, net stop).
func subcommand(reason string, names ...string) winRule {
	return func(w *win, args []carg, in stageInput) {
		if len(args) > 0 && slices.Contains(names, strings.ToLower(args[0].text)) {
			w.add(reason)
		}
	}
}

// always flags the program whatever its arguments (format, diskpart).
func always(reason string) winRule {
	return func(w *win, args []carg, in stageInput) {
		if len(args) == 1 && args[0].text == "/?" {
			return
		}
		w.add(reason)
	}
}

// switches lists a cmd.exe program's switches, lower-case and without
// their /: /S/Q and /s,/q are s and q; /grant:r is grant:r.
func switches(args []carg) []string {
	var out []string
	for _, a := range args {
		for _, part := range strings.FieldsFunc(strings.ToLower(a.text), func(r rune) bool { return r == ',' || r == ';' }) {
			if !strings.HasPrefix(part, "/") && !strings.HasPrefix(part, "-") {
				continue
			}
			for _, sw := range strings.FieldsFunc(part, func(r rune) bool { return r == '/' }) {
				out = append(out, strings.TrimPrefix(sw, "-"))
			}
		}
	}
	return out
}

// hasSwitch reports whether args have one of the switches (compared
// without a :value).
func hasSwitch(args []carg, names ...string) bool {
	for _, sw := range switches(args) {
		sw, _, _ = strings.Cut(sw, ":")
		for _, n := range names {
			if sw == n {
				return true
			}
		}
	}
	return false
}

// winPaths are the arguments that are not switches.
func winPaths(args []carg) []carg {
	var out []carg
	for _, a := range args {
		if !strings.HasPrefix(a.text, "/") && a.text != "" {
			out = append(out, a)
		}
	}
	return out
}

// winRoot reports whether p names a drive, the root, the user's home or
// a top-level directory (C:\, C:, \, C:\Windows, C:\Users\*, %USERPROFILE%,
// ~, ., ..), with or without a trailing \ or \*.
func winRoot(p string) bool {
	p = strings.ToLower(strings.Trim(strings.TrimSpace(p), `"'`))
	p = strings.ReplaceAll(p, "/", `\`)
	for _, suffix := range []string{`\*.*`, `\*`, `*.*`, `*`} {
		if s, ok := strings.CutSuffix(p, suffix); ok {
			p = s
			break
		}
	}
	p = strings.TrimRight(p, `\`)
	switch p {
	case "", ".", "..", "~", "$home", "$env:userprofile", "$env:systemroot", "$env:homedrive":
		return true
	}
	for _, v := range []string{"%userprofile%", "%systemroot%", "%windir%", "%systemdrive%", "%homedrive%", "%homepath%", "%programfiles%"} {
		if p == v {
			return true
		}
	}
	if s, ok := strings.CutPrefix(p, `\\?\`); ok {
		p = s
	}
	abs := false
	if len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z') {
		p, abs = p[2:], true
	}
	if s, ok := strings.CutPrefix(p, `\`); ok {
		p, abs = s, true
	}
	// An absolute path at most one level under the root.
	return abs && !strings.Contains(p, `\`)
}

// rdRule: rd /s removes a directory tree.
func rdRule(w *win, args []carg, in stageInput) {
	if !hasSwitch(args, "s") {
		return
	}
	for _, a := range winPaths(args) {
		if winRoot(a.text) {
			w.add(reasonRootDelete)
			return
		}
	}
	w.add(reasonRecursiveDelete)
}

// delRule: del /s deletes in every subdirectory; del of a drive or
// top-level directory deletes its files.
func delRule(w *win, args []carg, in stageInput) {
	if hasSwitch(args, "s") {
		w.add(reasonRecursiveDelete)
	}
	for _, a := range winPaths(args) {
		if t := strings.TrimSpace(a.text); t != "*" && t != "*.*" && winRoot(t) {
			w.add(reasonRootDelete)
		}
	}
}

// winShutdownRule: shutdown /s /r /p /h /g /sg /rg /hybrid shut down,
// restart or hibernate; /a (abort), /l (log off) and /? do not.
func winShutdownRule(w *win, args []carg, in stageInput) {
	if hasSwitch(args, "s", "r", "p", "h", "g", "sg", "rg", "hybrid", "fw", "o") {
		w.add(reasonShutdown)
	}
}

// takeownRule: takeown /r takes ownership of a tree.
func takeownRule(w *win, args []carg, in stageInput) {
	if hasSwitch(args, "r") {
		w.add(reasonACL)
	}
}

// icaclsRule: icacls /t changes a tree; granting everyone full or modify
// access to one is chmod -R 777.
func icaclsRule(w *win, args []carg, in stageInput) {
	if !hasSwitch(args, "t") {
		return
	}
	granted := false
	for i, a := range args {
		l := strings.ToLower(a.text)
		if strings.HasPrefix(l, "/grant") && i+1 < len(args) {
			ace := strings.ToLower(args[i+1].text)
			who, perm, _ := strings.Cut(ace, ":")
			if (who == "everyone" || who == "*s-1-1-0" || who == "users" || who == "*s-1-5-32-545" || who == "authenticated users") &&
				(strings.Contains(perm, "f") || strings.Contains(perm, "m") || strings.Contains(perm, "w")) {
				granted = true
			}
		}
	}
	switch {
	case granted:
		w.add(reasonChmod777)
	case hasSwitch(args, "grant", "deny", "remove", "setowner", "reset", "inheritance", "setintegritylevel", "restore"):
		w.add(reasonACL)
	}
}

// regRule: reg delete, and reg add/import/restore/load/copy/unload to
// the machine's keys (HKLM, HKCR, HKU).
func regRule(w *win, args []carg, in stageInput) {
	if len(args) == 0 {
		return
	}
	switch strings.ToLower(args[0].text) {
	case "delete", "import", "restore", "load", "unload":
		w.add(reasonRegistry)
	case "add", "copy":
		for _, a := range args[1:] {
			if machineKey(a.text) {
				w.add(reasonRegistry)
			}
		}
	}
}

// machineKey reports whether a registry path is under the machine's keys.
func machineKey(k string) bool {
	k = strings.ToLower(strings.TrimLeft(k, `\`))
	for _, p := range []string{"hklm", "hkey_local_machine", "hkcr", "hkey_classes_root", "hku", "hkey_users"} {
		if k == p || strings.HasPrefix(k, p+`\`) || strings.HasPrefix(k, p+":") {
			return true
		}
	}
	return false
}

// regeditRule: regedit /s file imports a .reg file silently.
func regeditRule(w *win, args []carg, in stageInput) {
	if len(winPaths(args)) > 0 {
		w.add(reasonRegistry)
	}
}

// taskkillRule: taskkill /im NAME or /fi FILTER kills processes by name.
func taskkillRule(w *win, args []carg, in stageInput) {
	if hasSwitch(args, "im", "fi") {
		w.add(reasonKillByName)
	}
}

// wordLine is args lower-cased and joined by spaces, with a space at each
// end, for rules that look for words in any order (" delete ").
func wordLine(args []carg) string {
	var words []string
	for _, a := range args {
		words = append(words, strings.ToLower(a.text))
	}
	return " " + strings.Join(words, " ") + " "
}

// wmicRule: wmic process ... delete/terminate, wmic shadowcopy delete.
func wmicRule(w *win, args []carg, in stageInput) {
	line := wordLine(args)
	switch {
	case strings.Contains(line, " shadowcopy ") && strings.Contains(line, " delete "):
		w.add(reasonShadows)
	case strings.Contains(line, " process ") && (strings.Contains(line, " delete ") || strings.Contains(line, " terminate")):
		w.add(reasonKillByName)
	case strings.Contains(line, " os ") && (strings.Contains(line, " shutdown") || strings.Contains(line, " reboot") || strings.Contains(line, " win32shutdown")):
		w.add(reasonShutdown)
	}
}

// bcdeditRule: bcdedit changes the boot configuration unless it only
// lists it (/enum, /v, none).
func bcdeditRule(w *win, args []carg, in stageInput) {
	sw := switches(args)
	if len(sw) == 0 || sw[0] == "enum" || sw[0] == "v" || sw[0] == "?" {
		return
	}
	w.add(reasonBoot)
}

// cipherRule: cipher /w overwrites a volume's free space.
func cipherRule(w *win, args []carg, in stageInput) {
	if hasSwitch(args, "w") {
		w.add(reasonWipe)
	}
}

// scRule: sc stop/delete, sc config ... start= disabled.
func scRule(w *win, args []carg, in stageInput) {
	for i, a := range args {
		switch l := strings.ToLower(a.text); {
		case l == "stop" || l == "delete":
			if i <= 1 {
				w.add(reasonService)
			}
		case l == "start=" && i+1 < len(args) && strings.EqualFold(args[i+1].text, "disabled"), l == "start=disabled":
			w.add(reasonService)
		}
	}
}

// netshRule: netsh advfirewall set ... state off, netsh firewall set
// opmode disable, netsh advfirewall reset.
func netshRule(w *win, args []carg, in stageInput) {
	line := wordLine(args)
	if strings.Contains(line, "firewall") &&
		(strings.Contains(line, " state off ") || strings.Contains(line, " opmode disable") || strings.Contains(line, " mode=disable") || strings.Contains(line, " reset ")) {
		w.add(reasonFirewall)
	}
}

// remoteArgRule: mshta, regsvr32 /i:URL, rundll32 and msiexec given a URL
// run code downloaded from the network.
func remoteArgRule(w *win, args []carg, in stageInput) {
	for _, a := range args {
		l := strings.ToLower(a.text)
		if strings.Contains(l, "http://") || strings.Contains(l, "https://") || strings.Contains(l, "ftp://") {
			w.add(reasonRemoteScript)
			return
		}
	}
}
