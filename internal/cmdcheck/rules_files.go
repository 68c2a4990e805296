package cmdcheck

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// fileRules: deleting, overwriting, moving and opening up files and disks.
var fileRules = map[string]rule{
	"rm": rmRule, "unlink": rmRule,
	"shred": shredRule, "wipe": shredRule, "srm": shredRule,
	"mkfs": formatRule, "mke2fs": formatRule, "mkswap": formatRule, "wipefs": formatRule, "mkdosfs": formatRule,
	"mkntfs": formatRule, "newfs": formatRule, "fdisk": formatRule, "sfdisk": formatRule, "gdisk": formatRule,
	"sgdisk": formatRule, "parted": formatRule, "cfdisk": formatRule,
	"dd":  ddRule,
	"tee": teeRule,
	"cp":  copyRule, "mv": copyRule, "install": copyRule, "ln": copyRule, "truncate": copyRule,
	"rsync": rsyncRule,
	"sed":   inPlaceRule,
	"chmod": chmodRule,
	"chown": chownRule, "chgrp": chownRule,
}

var deviceRe = regexp.MustCompile(`^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|loop|mapper/|sr|mem$|kmem$|port$)`)

func rmRule(s *scan, cmd *command) {
	recursive, broad := false, false
	opts := true
	for _, a := range cmd.args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			// GNU rm takes any unambiguous abbreviation (--recu).
			if longOpt(a, "no-preserve-root") {
				broad = true
			}
			if longOpt(a, "recursive") {
				recursive = true
			}
		case opts && shortFlag(a, "rR"):
			recursive = true
		case opts && strings.HasPrefix(a, "-") && a != "-":
		default:
			if broadPath(a) {
				broad = true
			}
		}
	}
	switch {
	case broad:
		s.add(reasonRootDelete)
	case recursive:
		s.add(reasonRecursiveDelete)
	}
	if slices.Contains(cmd.via, "xargs") {
		s.add(reasonXargsDelete)
	}
}

func shredRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if deviceRe.MatchString(a) {
			s.add(reasonDeviceWrite)
		} else if broadPath(a) {
			s.add(reasonRootDelete)
		}
	}
}

func formatRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "-l" || a == "--list" || a == "--version" || a == "-v" {
			return
		}
	}
	s.add(reasonFormat)
}

func ddRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if v, ok := strings.CutPrefix(a, "of="); ok {
			writeTarget(s, v)
		}
	}
}

func teeRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if !strings.HasPrefix(a, "-") {
			writeTarget(s, a)
		}
	}
}

// copyRule: the last path is written; mv also takes the others away.
func copyRule(s *scan, cmd *command) {
	pos := positional(cmd.args)
	if len(pos) > 0 {
		writeTarget(s, pos[len(pos)-1])
	}
	if cmd.name == "mv" && len(pos) > 1 {
		for _, a := range pos[:len(pos)-1] {
			if broadPath(a) {
				s.add(reasonMoveRoot)
			}
		}
	}
}

// rsyncRule: the destination is written, and --delete (in all its forms:
// --del, --delete-after, --delete-excluded, ...) and --remove-source-files
// delete files.
func rsyncRule(s *scan, cmd *command) {
	copyRule(s, cmd)
	for _, a := range cmd.args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		// --del is --delete-during; --delay-updates deletes nothing.
		if strings.HasPrefix(a, "--") && (name == "del" || strings.HasPrefix(name, "dele") || longOpt(a, "remove-source-files", "remove-sent-files")) {
			s.add(reasonSyncDelete)
		}
	}
}

// inPlaceRule: sed -i (and perl -i) write the files they are given.
func inPlaceRule(s *scan, cmd *command) {
	inPlace := false
	for _, a := range cmd.args {
		if strings.HasPrefix(a, "-i") || longOpt(a, "in-place") || (family(cmd.name) == "perl" && shortFlag(a, "i")) {
			inPlace = true
		}
	}
	if inPlace {
		for _, a := range positional(cmd.args) {
			writeTarget(s, a)
		}
	}
}

func chmodRule(s *scan, cmd *command) {
	recursive, open, broad := false, false, false
	for _, a := range cmd.args {
		switch {
		case longOpt(a, "recursive") || (shortFlag(a, "R") && !isMode(a)):
			recursive = true
		case isWorldWritable(a):
			open = true
		case !strings.HasPrefix(a, "-") && broadPath(a):
			broad = true
		}
	}
	if recursive && open {
		s.add(reasonChmod777)
	}
	if recursive && broad {
		s.add(reasonChmodRoot)
	}
}

func chownRule(s *scan, cmd *command) {
	recursive, broad := false, false
	pos := 0
	for _, a := range cmd.args {
		switch {
		case longOpt(a, "recursive") || shortFlag(a, "R"):
			recursive = true
		case strings.HasPrefix(a, "-"):
		default:
			if pos > 0 && broadPath(a) { // the first positional is the owner
				broad = true
			}
			pos++
		}
	}
	if recursive && broad {
		s.add(reasonChownRoot)
	}
}

// writeTarget checks a path something is written to.
func writeTarget(s *scan, p string) {
	lp := strings.ToLower(strings.TrimSpace(p))
	switch {
	case deviceRe.MatchString(lp):
		s.add(reasonDeviceWrite)
	case lp == "/etc" || strings.HasPrefix(lp, "/etc/") || strings.HasPrefix(lp, "/private/etc/"):
		s.add(reasonEtc)
	case strings.HasPrefix(lp, "~/.ssh") || strings.HasPrefix(lp, "$home/.ssh") || strings.HasPrefix(lp, "${home}/.ssh") ||
		strings.HasPrefix(lp, ".ssh/") || lp == ".ssh" || strings.Contains(lp, "/.ssh/") || strings.HasSuffix(lp, "/.ssh"):
		s.add(reasonSSH)
	}
}

// isMode reports whether a chmod argument is a mode like -rwx (a mode
// removing permissions), not an option.
func isMode(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	return strings.Trim(a[1:], "rwxXst") == ""
}

// isWorldWritable reports whether a chmod mode makes files writable by
// everyone (777, 0777, 666, a+w, o+rwx, ...).
func isWorldWritable(m string) bool {
	if m == "" || m[0] == '-' {
		return false
	}
	if n, err := strconv.ParseUint(m, 8, 32); err == nil && len(m) >= 3 {
		return n&0o002 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		who, perm, ok := strings.Cut(clause, "+")
		if !ok {
			who, perm, ok = strings.Cut(clause, "=")
		}
		if ok && (who == "" || strings.ContainsAny(who, "oa")) && strings.Contains(perm, "w") {
			return true
		}
	}
	return false
}

// broadPath reports whether p is /, ~, a top-level directory, a home
// directory, the current or a parent directory, or everything in one
// (/*, ~/*, *).
func broadPath(p string) bool {
	p = strings.TrimSpace(p)
	if p == "" {
		return false
	}
	for _, home := range []string{"$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(p, home); ok && (rest == "" || rest[0] == '/') {
			p = "~" + rest
		}
	}
	wasRoot := strings.HasPrefix(p, "/")
	for {
		t := p
		for _, suf := range []string{"/*", "/.*", "/.", "/"} {
			t = strings.TrimSuffix(t, suf)
		}
		if t == p {
			break
		}
		p = t
	}
	if p == "" {
		return wasRoot
	}
	switch p {
	case "~", ".", "..", "*", ".*":
		return true
	}
	if strings.HasPrefix(p, "~") && !strings.Contains(p, "/") {
		return true // ~user
	}
	if strings.HasPrefix(p, "/") {
		var parts []string
		for _, s := range strings.Split(p, "/") {
			if s != "" && s != "." {
				parts = append(parts, s)
			}
		}
		if len(parts) <= 1 {
			return true
		}
		switch strings.ToLower(parts[0]) {
		case "home", "users":
			return len(parts) == 2
		}
		return false
	}
	// ../.., ./.. and the like.
	for _, s := range strings.Split(p, "/") {
		if s != "." && s != ".." && s != "" {
			return false
		}
	}
	return true
}
