//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesConfigOthersCouldWrite: a configuration file another user
// could have written (writable by all, or through a directory above it
// writable by all) chooses the mode, the approvals and the tools, so it is
// refused with what to do, not used. (Before, a world-writable file could
// set `mode: project` and `approvals: off`.)
func TestLoadRefusesConfigOthersCouldWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("code_execution:\n  mode: project\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("a private file: %v", err)
	}
	for _, tc := range []struct {
		name, chmod   string
		mode, restore os.FileMode
	}{
		{"file writable by all", path, 0o666, 0o600},
		{"directory writable by all", dir, 0o777, 0o700},
	} {
		if err := os.Chmod(tc.chmod, tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		var cerr *Error
		if !errors.As(err, &cerr) || !strings.Contains(cerr.Msg, "is writable by every user") || !strings.Contains(cerr.Msg, "chmod go-w") {
			t.Errorf("%s: got %v", tc.name, err)
		}
		if err := os.Chmod(tc.chmod, tc.restore); err != nil {
			t.Fatal(err)
		}
	}
}
