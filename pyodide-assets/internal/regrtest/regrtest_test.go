package regrtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScriptAndResultPrefix(t *testing.T) {
	s := Script("test_os")
	require.True(t, strings.HasPrefix(s, "MODULE = \"test_os\"\n#"), s[:40])
	// The runner prints the prefix ParseOutput looks for.
	require.Contains(t, runnerSource, `RESULT_PREFIX = "`+resultPrefix+`"`)
}

func TestParseOutput(t *testing.T) {
	line := `REGRTEST-RESULT {"module": "test_x", "passed": 3, "failed": 1, "skipped": 2, "module_skip": "", "error": "", "failures": ["test_a (test.test_x.T.test_a):\nAssertionError: 1 != 2"], "exceptions": [{"line": "AssertionError: 1 != 2", "count": 1}], "seconds": 0.5}`
	o, err := ParseOutput("test_x", "some test output\n"+line+"\n")
	require.NoError(t, err)
	require.Equal(t, Outcome{
		Module: "test_x", Status: StatusOK, Passed: 3, Failed: 1, Skipped: 2,
		Failures:   []string{"test_a (test.test_x.T.test_a):\nAssertionError: 1 != 2"},
		Exceptions: []Exception{{Line: "AssertionError: 1 != 2", Count: 1}},
		Seconds:    0.5,
	}, o)

	// The last result line counts (a test may print the prefix itself);
	// the line alone, with no newline, parses too.
	o, err = ParseOutput("test_x", `REGRTEST-RESULT {"module": "test_x", "passed": 9}`+"\nmore\n"+line)
	require.NoError(t, err)
	require.Equal(t, 3, o.Passed)

	_, err = ParseOutput("test_x", "Traceback...\nMemoryError\n")
	require.ErrorContains(t, err, "no result line")
	_, err = ParseOutput("test_y", line)
	require.ErrorContains(t, err, `of module "test_x", not "test_y"`)
	_, err = ParseOutput("test_x", "REGRTEST-RESULT {\"module\": \n")
	require.ErrorContains(t, err, "not the runner's JSON")
}

func TestNativeOutcome(t *testing.T) {
	o := NativeOutcome("test_x", "", "", true, nil, 3*time.Second)
	require.Equal(t, Outcome{Module: "test_x", Status: StatusTimeout, Seconds: 3}, o)
	o = NativeOutcome("test_x", "partial", "Fatal Python error: Segmentation fault\n", false, nil, time.Second)
	require.Equal(t, StatusCrash, o.Status)
	require.Equal(t, "Fatal Python error: Segmentation fault", o.Error)
}

func TestClassify(t *testing.T) {
	fails := func(lines ...string) Outcome {
		o := Outcome{Status: StatusOK, Passed: 5}
		for _, l := range lines {
			o.Failed++
			o.Exceptions = append(o.Exceptions, Exception{Line: l, Count: 1})
		}
		return o
	}
	for _, c := range []struct {
		o     Outcome
		class string
		note  string
	}{
		{Outcome{Status: StatusTimeout}, ClassTimeout, ""},
		{Outcome{Status: StatusCrash, Error: "wasm error: unreachable\nRecursionError: maximum recursion depth exceeded"}, ClassStack, "crash: RecursionError: maximum recursion depth exceeded"},
		{Outcome{Status: StatusCrash, Error: "wasm error: out of bounds memory access"}, ClassOther, "crash: wasm error: out of bounds memory access"},
		{Outcome{Status: StatusOK, Error: "import: Traceback\nModuleNotFoundError: No module named '_testcapi'"}, ClassBuild, "ModuleNotFoundError: No module named '_testcapi'"},
		{Outcome{Status: StatusOK, Error: "import: Traceback\nModuleNotFoundError: No module named 'pwd'"}, ClassWASI, "ModuleNotFoundError: No module named 'pwd'"},
		{Outcome{Status: StatusOK, ModuleSkip: "SkipTest: requires subprocess support"}, ClassProcesses, "skipped: SkipTest: requires subprocess support"},
		{Outcome{Status: StatusOK, ModuleSkip: "SkipTest: No module named '_ssl'"}, ClassBuild, "skipped: SkipTest: No module named '_ssl'"},
		{Outcome{Status: StatusOK, ModuleSkip: "setUpModule: requires threading support"}, ClassThreads, "skipped: setUpModule: requires threading support"},
		{Outcome{Status: StatusOK, ModuleSkip: "SkipTest: requires socket support"}, ClassSockets, "skipped: SkipTest: requires socket support"},
		// The class of most failures wins; among equals, the first in
		// classOrder.
		{fails("MemoryError", "PermissionError: [Errno 63] Operation not permitted: 'x'", "PermissionError: [Errno 63] Operation not permitted: 'y'"), ClassFS, "PermissionError: [Errno 63] Operation not permitted: 'x'"},
		{fails("AttributeError: module 'signal' has no attribute 'alarm'", "RuntimeError: can't start new thread"), ClassThreads, "RuntimeError: can't start new thread"},
		{fails("AttributeError: module 'os' has no attribute 'umask'"), ClassWASI, "AttributeError: module 'os' has no attribute 'umask'"},
		{fails("AssertionError: 1 != 2"), ClassOther, "AssertionError: 1 != 2"},
		// Every test skipped: the most frequent reason.
		{Outcome{Status: StatusOK, Skipped: 7, Skips: []Exception{{Line: "requires subprocess support", Count: 6}, {Line: "x", Count: 1}}}, ClassProcesses, "every test skipped (6: requires subprocess support)"},
	} {
		class, note := Classify(c.o)
		require.Equal(t, c.class, class, "%+v", c.o)
		require.Equal(t, c.note, note, "%+v", c.o)
	}
	// A last line no pattern knows is looked up in its traceback; the
	// note is the line that matched.
	o := fails("AssertionError: 0 != 1")
	o.Failures = []string{"test_a:\n  File \"x.py\", line 3\n    proc = subprocess.Popen()\nAssertionError: 0 != 1"}
	class, note := Classify(o)
	require.Equal(t, ClassProcesses, class)
	require.Equal(t, "proc = subprocess.Popen()", note)
	// A module of the named table gets its class and note when it fails.
	o = fails("AssertionError: 'a\\\\b' != 'a'")
	o.Module = "test_ntpath"
	class, note = Classify(o)
	require.Equal(t, named["test_ntpath"].class, class)
	require.Equal(t, named["test_ntpath"].note, note)
	for m, n := range named {
		require.Contains(t, classMeaning, n.class, m)
	}
	// Every class the classifier gives has a meaning in the legend.
	for _, p := range patterns {
		require.Contains(t, classMeaning, p.class)
	}
}

func TestReplaceBetweenMarkers(t *testing.T) {
	doc := "# Title\n\nbefore\n" + BeginMarker + "\nold table\n" + EndMarker + "\nafter\n"
	out, err := ReplaceBetweenMarkers([]byte(doc), "new table\n")
	require.NoError(t, err)
	require.Equal(t, "# Title\n\nbefore\n"+BeginMarker+"\n\nnew table\n\n"+EndMarker+"\nafter\n", string(out))
	// Rewriting is stable.
	again, err := ReplaceBetweenMarkers(out, "new table")
	require.NoError(t, err)
	require.Equal(t, string(out), string(again))

	for doc, want := range map[string]string{
		"no markers\n":                                    "are not both in the file",
		EndMarker + "\n" + BeginMarker + "\n":             "comes before",
		BeginMarker + EndMarker + BeginMarker + EndMarker: "appears twice",
	} {
		_, err := ReplaceBetweenMarkers([]byte(doc), "x")
		require.ErrorContains(t, err, want)
	}

	path := filepath.Join(t.TempDir(), "COMPATIBILITY.md")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	require.NoError(t, UpdateFile(path, "t"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# Title\n\nbefore\n"+BeginMarker+"\n\nt\n\n"+EndMarker+"\nafter\n", string(data))
}

func TestTable(t *testing.T) {
	all := []string{"test_a", "test_b", "test_c", "test_d", "test_e", "test_f", "test_g", "test_h", "test_i"}
	date := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	strict := &Run{Side: "strict", Interpreter: "strict mode", Machine: "m", Date: date, Timeout: 180, Seconds: 600, Modules: map[string]Outcome{
		"test_a": {Module: "test_a", Status: StatusOK, Passed: 10},
		"test_b": {Module: "test_b", Status: StatusOK, Passed: 4, Failed: 2, Exceptions: []Exception{{Line: "RuntimeError: can't start new thread", Count: 2}}},
		"test_c": {Module: "test_c", Status: StatusTimeout},
		"test_d": {Module: "test_d", Status: StatusOK, Passed: 1, Failed: 1, Exceptions: []Exception{{Line: "AssertionError: x | y", Count: 1}}},
		"test_e": {Module: "test_e", Status: StatusOK, ModuleSkip: "SkipTest: requires subprocess support"},
		"test_g": {Module: "test_g", Status: StatusOK, ModuleSkip: "SkipTest: Windows only"},
		"test_h": {Module: "test_h", Status: StatusOK, Skipped: 3, Skips: []Exception{{Line: "requires threading support", Count: 3}}},
		"test_i": {Module: "test_i", Status: StatusOK, Skipped: 2},
	}}
	native := &Run{Side: "native", Interpreter: "native", Machine: "m", Date: date, Timeout: 180, Seconds: 60, Modules: map[string]Outcome{
		"test_a": {Module: "test_a", Status: StatusOK, Passed: 10, Skipped: 1},
		"test_b": {Module: "test_b", Status: StatusOK, Passed: 6},
		"test_c": {Module: "test_c", Status: StatusOK, Passed: 20},
		"test_d": {Module: "test_d", Status: StatusOK, Passed: 1, Failed: 1, Exceptions: []Exception{{Line: "AssertionError: x | y", Count: 1}}},
		"test_e": {Module: "test_e", Status: StatusOK, Passed: 3},
		"test_f": {Module: "test_f", Status: StatusOK, Passed: 3},
		"test_g": {Module: "test_g", Status: StatusOK, ModuleSkip: "SkipTest: Windows only"},
		"test_h": {Module: "test_h", Status: StatusOK, Passed: 3},
		"test_i": {Module: "test_i", Status: StatusOK, Skipped: 2},
	}}
	table := Table(all, strict, native)
	require.Equal(t, table, Table(all, strict, native), "the table is the same for the same results")
	for _, want := range []string{
		"- Modules passing in both (their tests ran, none failed): 1 of 8; skipped as a whole in both: 2.\n",
		"- Tests passed in strict mode: 15 of the 43 that pass natively (34.9%",
		"by class: no threads 2; no processes 1; timeout 1; 4 in all.\n",
		"- Not run in strict mode yet (1): test_f. Run them with `make compat-cpython ARGS=-resume`.\n",
		"| test_a | 10/0/0 | 10/0/1 |  |\n| test_b | 4/2/0 | 6/0/0 | no threads: RuntimeError: can't start new thread |\n| test_c | timeout | 20/0/0 | timeout |\n" +
			"| test_d | 1/1/0 | 1/1/0 | fails natively: AssertionError: x \\| y |\n| test_e | skipped | 3/0/0 | no processes: skipped: SkipTest: requires subprocess support |\n| test_f | – | 3/0/0 | not run in strict mode |\n" +
			"| test_g | skipped | skipped | skipped natively: SkipTest: Windows only |\n" +
			"| test_h | 0/0/3 | 3/0/0 | no threads: every test skipped (3: requires threading support) |\n| test_i | 0/0/2 | 0/0/2 | skipped natively |\n",
	} {
		require.Contains(t, table, want)
	}
}

func TestAllModules(t *testing.T) {
	lib := t.TempDir()
	for _, f := range []string{
		"test/__init__.py", "test/test_b.py", "test/test_a.py", "test/support/__init__.py", "test/datetimetester.py",
		"test/test_pkg/__init__.py", "test/test_pkg/test_inner.py", "test/test_data/file.txt",
		"test/test_asyncio/__init__.py", "test/test_asyncio/test_tasks.py", "test/test_asyncio/utils.py",
		"test/test_asyncio/test_events.py",
	} {
		p := filepath.Join(lib, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	mods, err := AllModules(lib)
	require.NoError(t, err)
	require.Equal(t, []string{"test_a", "test_asyncio.test_events", "test_asyncio.test_tasks", "test_b", "test_pkg"}, mods)
}
