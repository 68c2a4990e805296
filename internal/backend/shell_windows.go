//go:build windows

package backend

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// GitBashEnv names a bash.exe for terminal() commands on Windows, as in
// Hermes Agent.
const GitBashEnv = "HERMES_GIT_BASH_PATH"

// gitBash finds the bash of Git for Windows the way Hermes Agent's local
// terminal does, so the same commands (written for a POSIX shell) run:
// $HERMES_GIT_BASH_PATH, Hermes's own portable Git under
// %LOCALAPPDATA%\hermes\git, bash on PATH (except System32's bash.exe,
// which starts WSL rather than running here), then the standard Git for
// Windows install dirs. "" when there is none: commands then run with
// cmd.exe.
func gitBash() string {
	isFile := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	if p := os.Getenv(GitBashEnv); p != "" && isFile(p) {
		return p
	}
	local := os.Getenv("LOCALAPPDATA")
	if local != "" {
		for _, p := range []string{
			filepath.Join(local, "hermes", "git", "bin", "bash.exe"),
			filepath.Join(local, "hermes", "git", "usr", "bin", "bash.exe"),
		} {
			if isFile(p) {
				return p
			}
		}
	}
	if p, err := exec.LookPath("bash"); err == nil && !isSystem32(p) {
		return p
	}
	for _, base := range []string{os.Getenv("ProgramFiles"), os.Getenv("ProgramFiles(x86)"), filepath.Join(local, "Programs")} {
		if base == "" || base == "Programs" {
			continue
		}
		if p := filepath.Join(base, "Git", "bin", "bash.exe"); isFile(p) {
			return p
		}
	}
	return ""
}

// isSystem32 reports whether p is in the Windows system dir (WSL's
// bash.exe launcher lives there).
func isSystem32(p string) bool {
	root := os.Getenv("SYSTEMROOT")
	if root == "" {
		root = `C:\Windows`
	}
	dir := filepath.Dir(p)
	for _, sys := range []string{"System32", "SysWOW64", "Sysnative"} {
		if strings.EqualFold(dir, filepath.Join(root, sys)) {
			return true
		}
	}
	return false
}

// LocalRunsCmd reports whether a terminal() command on this host runs
// with cmd.exe: on Windows when gitBash finds no Git Bash (elsewhere,
// and with Git Bash, it runs with a POSIX shell).
func LocalRunsCmd() bool { return gitBash() == "" }

// shellCommand runs command with Git Bash (bash -c) when gitBash finds
// one, else with cmd /d /s /c, whose command line is passed verbatim
// (cmd.exe does its own parsing). Its process tree (process group, job
// object) is proctree's.
func shellCommand(command string) *exec.Cmd {
	if bash := gitBash(); bash != "" {
		cmd := exec.Command(bash, "-c", command)
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: createNoWindow}
		return cmd
	}
	comspec := os.Getenv("COMSPEC")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine:       syscall.EscapeArg(comspec) + ` /d /s /c "` + command + `"`,
		CreationFlags: createNoWindow,
	}
	return cmd
}
