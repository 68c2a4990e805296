package cmdcheck

import (
	"slices"
	"testing"
	"time"
)

// allReasons are the reasons Check may give.
var allReasons = []string{
	reasonRootDelete, reasonRecursiveDelete, reasonXargsDelete, reasonFindDelete, reasonPrivilege,
	reasonFormat, reasonDeviceWrite, reasonChmod777, reasonChmodRoot, reasonChownRoot, reasonMoveRoot,
	reasonForkBomb, reasonRemoteScript, reasonShutdown, reasonKillAll, reasonKillByName, reasonForcePush,
	reasonResetHard, reasonGitClean, reasonSQLDrop, reasonSQLTruncate, reasonSQLDelete, reasonService,
	reasonFirewall, reasonHistory, reasonCrontab, reasonEtc, reasonSSH, reasonTooComplex,
	reasonDynamic, reasonEval, reasonStdinCode, reasonUnparseable, reasonTooLong,
	reasonKillParent, reasonTarRemove, reasonSyncDelete, reasonGitCode, reasonZipMove,
	reasonEncoded, reasonRegistry, reasonACL, reasonBoot, reasonShadows, reasonWipe, reasonEventLogs, reasonPipedDelete,
	reasonAlias, reasonChmodWorld, reasonSetuid, reasonPermSystem, reasonChownToRoot, reasonDiskErase, reasonKernel,
	reasonSignalByName, reasonSpawnLoop, reasonRemoteDelete, reasonGitHistory, reasonBranchDelete, reasonUninstall,
	reasonContainers, reasonDockerHost, reasonMetadata, reasonShellStartup, reasonCredentials, reasonEnvConfig, reasonGateway,
}

// knownReason reports whether r is a reason Check may give: one of
// allReasons, or the dynamic-arguments reason of a program with rules.
func knownReason(r string) bool {
	if slices.Contains(allReasons, r) {
		return true
	}
	for name := range argRules {
		if r == reasonDynamicArgs(name) {
			return true
		}
	}
	for _, table := range []map[string]bool{winProgs(), psRules, remoteProgs()} {
		for name := range table {
			if r == reasonDynamicArgs(name) {
				return true
			}
		}
	}
	return false
}

// winProgs and remoteProgs are the names of winRules and remoteRules.
func winProgs() map[string]bool {
	out := map[string]bool{}
	for name := range winRules {
		out[name] = true
	}
	return out
}

func remoteProgs() map[string]bool {
	out := map[string]bool{}
	for name := range remoteRules {
		out[name] = true
	}
	return out
}

// FuzzCheck: Check never panics, returns within a bounded time, gives the
// same answer twice, and only gives known reasons, each once.
func FuzzCheck(f *testing.F) {
	for cmd := range oldDangerous {
		f.Add(cmd)
	}
	for cmd := range newDangerous {
		f.Add(cmd)
	}
	for cmd := range round2Dangerous {
		f.Add(cmd)
	}
	for cmd := range round3Dangerous {
		f.Add(cmd)
	}
	for _, cmd := range slices.Concat(oldHarmless, newHarmless, round2Harmless, round3Harmless) {
		f.Add(cmd)
	}
	for _, s := range []string{"a'b", "$(", "`", "$'\\x", "x > ", "bash -c 'sh -c \"eval rm -rf x\"'", "{a,b}{c,d}{1..99}", "${IFS}", "<<EOF", "f() { f | f & }", "git -c alias.x x", "timeout -q nice -q nice -q rm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkOnce(t, s, Sh)
	})
}

// FuzzCheckCmd is FuzzCheck for the cmd.exe dialect.
func FuzzCheckCmd(f *testing.F) {
	for cmd := range cmdDangerous {
		f.Add(cmd)
	}
	for _, cmd := range cmdHarmless {
		f.Add(cmd)
	}
	for _, s := range []string{`"`, `^`, `(((`, `)))`, `%`, `!a!`, `if`, `if not`, `for /f %i in ('`, `cmd /c "`, `powershell -c "'`, "powershell -c \"`", `2>&1`, `>`, `<# x`, `start "`, `wsl -u`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkOnce(t, s, Cmd)
	})
}

// checkOnce checks s in dialect d: CheckShell does not panic, returns
// within a bounded time, gives the same answer twice, and only gives
// known reasons, each once.
func checkOnce(t *testing.T, s string, d Dialect) {
	t.Helper()
	done := make(chan []string, 1)
	go func() { done <- CheckShell(s, d) }()
	var got []string
	select {
	case got = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Check(%q) did not return", s)
	}
	if again := CheckShell(s, d); !slices.Equal(got, again) {
		t.Fatalf("Check(%q) = %q, then %q", s, got, again)
	}
	for i, r := range got {
		if !knownReason(r) || slices.Contains(got[:i], r) {
			t.Fatalf("Check(%q) gave %q", s, got)
		}
	}
}
