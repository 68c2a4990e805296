package cmdcheck

import (
	"path"
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
	"blkdiscard": eraseRule, "lvremove": eraseRule, "vgremove": eraseRule, "pvremove": eraseRule,
	"sg_format": eraseRule, "sg_sanitize": eraseRule,
	"hdparm": hdparmRule, "nvme": nvmeRule, "cryptsetup": cryptsetupRule, "mdadm": mdadmRule,
	"zpool": zfsRule, "zfs": zfsRule, "diskutil": diskutilRule, "dmsetup": dmsetupRule,
	"sysctl": sysctlRule, "modprobe": modprobeRule, "insmod": flag(reasonKernel), "rmmod": flag(reasonKernel),
	"dd":  ddRule,
	"tee": teeRule,
	"cp":  copyRule, "mv": copyRule, "install": copyRule, "ln": copyRule, "truncate": copyRule,
	"rsync": rsyncRule,
	"sed":   inPlaceRule,
	"chmod": chmodRule,
	"chown": chownRule, "chgrp": chownRule,
}

var deviceRe = regexp.MustCompile(`^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|loop|nbd|pmem|mtd|zd|rbd|bcache|mapper/|sr|mem$|kmem$|port$|watchdog)`)

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
	optionCode(s, cmd, "e", "rsh") // the remote shell it runs
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

// chmodRule: making files writable by everyone (recursively or not),
// setuid, and any change of /, ~, a home or a system directory.
func chmodRule(s *scan, cmd *command) {
	recursive, open, setuid, broad, system := false, false, false, false, false
	for _, a := range cmd.args {
		switch {
		case longOpt(a, "recursive") || (shortFlag(a, "R") && !isMode(a)):
			recursive = true
		case isWorldWritable(a):
			open = true
		case isSetuid(a):
			setuid = true
		case !strings.HasPrefix(a, "-"):
			broad = broad || broadPath(a)
			system = system || systemPath(a)
		}
	}
	switch {
	case recursive && open:
		s.add(reasonChmod777)
	case open:
		s.add(reasonChmodWorld)
	}
	if setuid {
		s.add(reasonSetuid)
	}
	switch {
	case recursive && broad:
		s.add(reasonChmodRoot)
	case system:
		s.add(reasonPermSystem)
	}
}

// chownRule: a recursive change of a broad path, a recursive change to
// root, and any change of a system directory.
func chownRule(s *scan, cmd *command) {
	recursive, broad, system, toRoot := false, false, false, false
	pos := 0
	for _, a := range cmd.args {
		switch {
		case longOpt(a, "recursive") || shortFlag(a, "R"):
			recursive = true
		case strings.HasPrefix(a, "-"):
		default:
			if pos == 0 { // the owner (chgrp: the group)
				owner, _, _ := strings.Cut(a, ":")
				toRoot = cmd.name == "chown" && (owner == "root" || owner == "0")
			} else {
				broad = broad || broadPath(a)
				system = system || systemPath(a)
			}
			pos++
		}
	}
	switch {
	case recursive && broad:
		s.add(reasonChownRoot)
	case system:
		s.add(reasonPermSystem)
	}
	if recursive && toRoot {
		s.add(reasonChownToRoot)
	}
}

// systemDirs hold the system: a change of their permissions or owner, or
// of anything in them, can break the machine or open it up.
var systemDirs = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/root",
	"/dev", "/proc", "/sys", "/var/lib", "/var/spool", "/var/log", "/System", "/Library", "/private/etc", "/private/var"}

// systemPath reports whether p is /, a top-level directory, ~ or a home
// directory (broadPath without the relative ones: chmod 644 * is ordinary
// work), ~/.ssh, or in a system directory.
func systemPath(p string) bool {
	p = strings.TrimSpace(p)
	if broadPath(p) && (strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") || strings.HasPrefix(p, "${HOME}")) {
		return true
	}
	if strings.Contains(p, ".ssh") {
		return true
	}
	clean := path.Clean(p)
	for _, d := range systemDirs {
		if clean == d || strings.HasPrefix(clean, d+"/") {
			return true
		}
	}
	return false
}

// writeTarget checks a path something is written to.
func writeTarget(s *scan, p string) {
	lp := strings.ToLower(strings.TrimSpace(p))
	base := lp[strings.LastIndexByte(lp, '/')+1:]
	switch {
	case deviceRe.MatchString(lp):
		s.add(reasonDeviceWrite)
	case lp == "/etc" || strings.HasPrefix(lp, "/etc/") || strings.HasPrefix(lp, "/private/etc/"):
		s.add(reasonEtc)
	case strings.HasPrefix(lp, "~/.ssh") || strings.HasPrefix(lp, "$home/.ssh") || strings.HasPrefix(lp, "${home}/.ssh") ||
		strings.HasPrefix(lp, ".ssh/") || lp == ".ssh" || strings.Contains(lp, "/.ssh/") || strings.HasSuffix(lp, "/.ssh"):
		s.add(reasonSSH)
	case kernelPath(lp):
		s.add(reasonKernel)
	case shellStartup[base] || strings.HasSuffix(lp, "/.config/fish/config.fish"):
		s.add(reasonShellStartup)
	case credentialFiles[base] || strings.Contains(lp, ".aws/credentials") || strings.Contains(lp, ".docker/config.json") ||
		strings.Contains(lp, ".kube/config") || strings.Contains(lp, "/.gnupg/"):
		s.add(reasonCredentials)
	case base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env") || base == "config.yaml":
		s.add(reasonEnvConfig)
	}
}

// shellStartup are the files a shell runs when it starts.
var shellStartup = map[string]bool{
	".bashrc": true, ".bash_profile": true, ".bash_login": true, ".bash_logout": true, ".profile": true,
	".zshrc": true, ".zprofile": true, ".zshenv": true, ".zlogin": true, ".zlogout": true,
	".kshrc": true, ".mkshrc": true, ".cshrc": true, ".tcshrc": true, ".login": true,
}

// credentialFiles hold passwords and tokens other programs read.
var credentialFiles = map[string]bool{
	".netrc": true, "_netrc": true, ".pgpass": true, ".npmrc": true, ".pypirc": true, ".git-credentials": true,
	".my.cnf": true,
}

// kernelPath reports whether p is a file of the running kernel's: /sys,
// /proc/sys, /proc/sysrq-trigger and the other files of /proc (a
// process's oom_score_adj, mem, ...), but not a file descriptor
// (/proc/self/fd/1 is stdout).
func kernelPath(p string) bool {
	p = path.Clean(p)
	switch {
	case p == "/sys" || strings.HasPrefix(p, "/sys/"):
		return true
	case strings.HasPrefix(p, "/proc/"):
		return !procFdRe.MatchString(p)
	}
	return false
}

// isSetuid reports whether a chmod mode sets the setuid bit (4755, u+s,
// +s); setgid alone (g+s, 2775) is the usual shared-directory setup.
func isSetuid(m string) bool {
	if m == "" || m[0] == '-' {
		return false
	}
	if n, err := strconv.ParseUint(m, 8, 32); err == nil {
		return len(m) >= 4 && n&0o4000 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		for _, op := range "+=" {
			who, perm, ok := strings.Cut(clause, string(op))
			if ok && (who == "" || strings.ContainsAny(who, "ua")) && strings.Contains(perm, "s") {
				return true
			}
		}
	}
	return false
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

// withShortFlag is the rule of a command that is dangerous, for reason, when
// given the one-letter flag letter (alone or among others, as -xc).
func withShortFlag(letter, reason string) rule {
	return func(s *scan, cmd *command) {
		for _, a := range cmd.args {
			if shortFlag(a, letter) {
				s.add(reason)
			}
		}
	}
}

// flag flags the program whatever its arguments, except a request for
// its help or version.
func flag(reason string) rule {
	return func(s *scan, cmd *command) {
		for _, a := range cmd.args {
			if a == "--help" || a == "-h" || a == "--version" || a == "-V" {
				return
			}
		}
		s.add(reason)
	}
}

// eraseRule: blkdiscard, lvremove, sg_format, ... exist to erase.
var eraseRule = flag(reasonDiskErase)

// subcommandRule flags the program when its first operand is one of
// verbs, in any case (zpool destroy, nvme format).
func subcommandRule(reason string, verbs ...string) rule {
	return func(s *scan, cmd *command) {
		if pos := positional(cmd.args); len(pos) > 0 && slices.Contains(verbs, strings.ToLower(pos[0])) {
			s.add(reason)
		}
	}
}

var (
	nvmeRule       = subcommandRule(reasonDiskErase, "format", "sanitize", "delete-ns", "write-zeroes", "write-uncor")
	cryptsetupRule = subcommandRule(reasonDiskErase, "luksformat", "erase", "lukserase", "lukskillslot", "luksremovekey", "reencrypt")
	zfsRule        = subcommandRule(reasonDiskErase, "destroy", "labelclear", "create", "rollback")
	dmsetupRule    = subcommandRule(reasonDiskErase, "remove", "remove_all", "wipe_table")
)

// hdparmRule: the options that erase or overwrite the drive (hdparm -I
// and -t only read).
func hdparmRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if longOpt(a, "security-erase", "security-erase-enhanced", "security-set-pass", "trim-sector-ranges",
			"trim-sector-ranges-stdin", "write-sector", "make-bad-sector", "dco-restore", "fwdownload") {
			s.add(reasonDiskErase)
		}
	}
}

// mdadmRule: --zero-superblock and --create overwrite the members'
// metadata.
func mdadmRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if longOpt(a, "zero-superblock", "create") || a == "-C" {
			s.add(reasonDiskErase)
		}
	}
}

// diskutilRule: macOS's erase verbs (diskutil list and info only read).
func diskutilRule(s *scan, cmd *command) {
	pos := positional(cmd.args)
	if len(pos) > 1 && (strings.EqualFold(pos[0], "apfs") || strings.EqualFold(pos[0], "cs") || strings.EqualFold(pos[0], "coreStorage")) {
		pos = pos[1:]
		if v := strings.ToLower(pos[0]); strings.HasPrefix(v, "delete") || strings.HasPrefix(v, "erase") {
			s.add(reasonDiskErase)
		}
		return
	}
	if len(pos) > 0 {
		switch strings.ToLower(pos[0]) {
		case "erasedisk", "erasevolume", "zerodisk", "randomdisk", "secureerase", "reformat", "partitiondisk", "splitpartition", "mergepartitions", "eraseoptical":
			s.add(reasonDiskErase)
		}
	}
}

// sysctlRule: sysctl KEY=VALUE, -w, -p and --system set kernel
// parameters (sysctl KEY and -a only read).
func sysctlRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if strings.Contains(a, "=") && !strings.HasPrefix(a, "-") || shortFlag(a, "wp") || longOpt(a, "write", "load", "system") {
			s.add(reasonKernel)
			return
		}
	}
}

// modprobeRule: loading or removing a kernel module (not a dry run or a
// query).
func modprobeRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if shortFlag(a, "ncDh") || longOpt(a, "dry-run", "show", "showconfig", "show-depends", "show-modversions", "show-exports", "dump-modversions", "help", "version") {
			return
		}
	}
	if len(cmd.args) > 0 {
		s.add(reasonKernel)
	}
}
