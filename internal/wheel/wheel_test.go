package wheel

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// makeWheel writes a wheel of files (name to content) with its WHEEL,
// METADATA and RECORD, and returns its path. edit, when not nil, changes
// the files after RECORD was made from them.
func makeWheel(t *testing.T, name, version string, purelib bool, files map[string]string, edit func(map[string]string)) string {
	t.Helper()
	di := name + "-" + version + ".dist-info"
	all := map[string]string{
		di + "/WHEEL":    fmt.Sprintf("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: %v\nTag: py3-none-any\n", purelib),
		di + "/METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n\nA test package.\n",
	}
	for k, v := range files {
		all[k] = v
	}
	var record strings.Builder
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		sum := sha256.Sum256([]byte(all[k]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", k, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[k]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", di)
	all[di+"/RECORD"] = record.String()
	if edit != nil {
		edit(all)
	}
	p := filepath.Join(t.TempDir(), name+"-"+version+"-py3-none-any.whl")
	f, err := os.Create(p)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	names = names[:0]
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		w, err := zw.Create(k)
		require.NoError(t, err)
		_, err = w.Write([]byte(all[k]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return p
}

func TestInstallPure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkgs")
	w := makeWheel(t, "tinyyaml", "1.2", true, map[string]string{
		"tinyyaml/__init__.py":                   "def load(s):\n    return dict(l.split(': ') for l in s.splitlines())\n",
		"tinyyaml/util.py":                       "X = 1\n",
		"tinyyaml-1.2.data/purelib/extra.py":     "E = 2\n",
		"tinyyaml-1.2.data/scripts/tinyyaml-cli": "#!/bin/sh\n",
	}, nil)
	p, err := Install(dir, w)
	require.NoError(t, err)
	require.Equal(t, "tinyyaml", p.Name)
	require.Equal(t, "1.2", p.Version)
	require.FileExists(t, filepath.Join(dir, "tinyyaml", "util.py"))
	require.FileExists(t, filepath.Join(dir, "extra.py"), "purelib data goes to the root")
	require.NoFileExists(t, filepath.Join(dir, "tinyyaml-cli"), "scripts are left out")
	m, err := ReadManifest(dir)
	require.NoError(t, err)
	require.Len(t, m.Packages, 1)
	require.Contains(t, m.Packages[0].Files, "tinyyaml/__init__.py")
	problems, err := Verify(dir)
	require.NoError(t, err)
	require.Empty(t, problems)

	// A changed file is found by Verify.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tinyyaml", "util.py"), []byte("X = 2\n"), 0o644))
	problems, err = Verify(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"tinyyaml: tinyyaml/util.py was changed since it was installed"}, problems)

	// The same package again, and a file another package has, are refused.
	_, err = Install(dir, w)
	require.ErrorContains(t, err, "tinyyaml 1.2 is installed in "+dir+" already")
	other := makeWheel(t, "other", "1.0", true, map[string]string{"tinyyaml/util.py": "X = 3\n"}, nil)
	_, err = Install(dir, other)
	require.ErrorContains(t, err, "tinyyaml/util.py exists in "+dir+" already")
}

// Each refused wheel leaves the dir as it was: nothing of it is written.
func TestInstallRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		wheel func(t *testing.T) string
		want  string
	}{
		"compiled, by its WHEEL": {func(t *testing.T) string {
			return makeWheel(t, "fast", "1.0", false, map[string]string{"fast/__init__.py": ""}, nil)
		}, "is not a pure-Python wheel (Root-Is-Purelib: false)"},
		"compiled, by a file": {func(t *testing.T) string {
			return makeWheel(t, "fast", "1.0", true, map[string]string{"fast/__init__.py": "", "fast/_speed.cpython-311-x86_64-linux-gnu.so": "ELF"}, nil)
		}, "holds compiled code (fast/_speed.cpython-311-x86_64-linux-gnu.so)"},
		"altered file": {func(t *testing.T) string {
			return makeWheel(t, "evil", "1.0", true, map[string]string{"evil/__init__.py": "ok\n"}, func(m map[string]string) { m["evil/__init__.py"] = "import os\n" })
		}, "evil/__init__.py does not match the hash its RECORD gives"},
		"file not in RECORD": {func(t *testing.T) string {
			return makeWheel(t, "evil", "1.0", true, map[string]string{"evil/__init__.py": ""}, func(m map[string]string) { m["evil/sneaky.py"] = "x" })
		}, "evil/sneaky.py is not in its RECORD"},
		"path out of the dir": {func(t *testing.T) string {
			return makeWheel(t, "evil", "1.0", true, map[string]string{"../escape.py": "x"}, nil)
		}, `refusing the member "../escape.py"`},
		"no RECORD": {func(t *testing.T) string {
			return makeWheel(t, "evil", "1.0", true, map[string]string{"evil/__init__.py": ""}, func(m map[string]string) { delete(m, "evil-1.0.dist-info/RECORD") })
		}, "RECORD is missing"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Install(dir, tc.wheel(t))
			require.ErrorContains(t, err, tc.want)
			ents, _ := os.ReadDir(dir)
			require.Empty(t, ents, "nothing written")
		})
	}
}
