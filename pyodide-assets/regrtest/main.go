// Command regrtest runs CPython's own regression tests (Lib/test of the
// interpreter's version, from Debian's packages) in strict mode, module by
// module, beside the same run in Debian trixie's native python3.13, and
// writes the table in COMPATIBILITY.md (between its cpython-regrtest
// markers). Run from the repository root (make compat-cpython):
//
//	go run ./pyodide-assets/regrtest [-strict=false] [-native=false] [-j N] [-timeout 180s]
//	    [-native-timeout 600s] [-run REGEXP] [-resume] [-table-only]
//
// Each side's results go to .cache/regrtest/{strict,native}.json, saved
// after each module: -resume skips the modules a file already holds, so an
// interrupted run goes on where it stopped. The native side needs root
// (a chroot); -native=false runs strict mode alone, -table-only rewrites
// the table from the files without running anything. It exits with status
// 1 and the error on any failure of the harness (failing tests are
// results, not failures).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/pyodide-assets/internal/regrtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "regrtest:", err)
		os.Exit(1)
	}
}

func run() error {
	strict := flag.Bool("strict", true, "run the modules in strict mode")
	native := flag.Bool("native", true, "run the modules in native python3.13 (a Debian trixie chroot; needs root)")
	jobs := flag.Int("j", 1, "modules run at once (natively, each in a chroot of its own)")
	timeout := flag.Duration("timeout", 180*time.Second, "each module's time limit in strict mode")
	nativeTimeout := flag.Duration("native-timeout", 600*time.Second, "each module's time limit natively (where the modules that start processes take minutes)")
	match := flag.String("run", "", "run only the modules matching this regexp (e.g. '^test_[a-f]')")
	resume := flag.Bool("resume", false, "skip the modules the results files already hold")
	tableOnly := flag.Bool("table-only", false, "only rewrite the table from the results files")
	results := flag.String("results", ".cache/regrtest", "dir of the results files")
	compat := flag.String("compat", "COMPATIBILITY.md", "the file whose table is rewritten")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Printf("%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	var re *regexp.Regexp
	if *match != "" {
		var err error
		if re, err = regexp.Compile(*match); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	lib, err := regrtest.Testsuite(ctx, logf)
	if err != nil {
		return err
	}
	all, err := regrtest.AllModules(lib)
	if err != nil {
		return err
	}
	strictPath := filepath.Join(*results, "strict.json")
	nativePath := filepath.Join(*results, "native.json")
	strictRun, err := regrtest.LoadRun(strictPath, "strict")
	if err != nil {
		return err
	}
	nativeRun, err := regrtest.LoadRun(nativePath, "native")
	if err != nil {
		return err
	}
	// pick lists the modules to run on a side. A side's time is that of
	// the run that makes its file, and of the earlier ones it resumes.
	pick := func(r *regrtest.Run) []string {
		if !*resume {
			r.Seconds = 0
		}
		var mods []string
		for _, m := range all {
			if re != nil && !re.MatchString(m) {
				continue
			}
			if _, done := r.Modules[m]; *resume && done {
				continue
			}
			mods = append(mods, m)
		}
		return mods
	}
	machine := regrtest.Machine()
	if !*tableOnly && *native {
		mods := pick(nativeRun)
		logf("native: %d modules, %d at once, %s each at most", len(mods), *jobs, *nativeTimeout)
		chroots := make(chan *regrtest.Chroot, max(*jobs, 1))
		closeAll := func() {
			for len(chroots) > 0 {
				(<-chroots).Close()
			}
		}
		for range max(*jobs, 1) {
			ch, err := regrtest.OpenChroot(ctx, logf, os.Stdout)
			if err != nil {
				closeAll()
				return err
			}
			chroots <- ch
		}
		nativeRun.Interpreter = "Debian trixie python3.13 " + regrtest.DebianVersion + ", user nobody, in a chroot"
		nativeRun.Machine, nativeRun.Timeout = machine, nativeTimeout.Seconds()
		err = regrtest.RunSide(ctx, regrtest.NativeSide{Chroots: chroots, Timeout: *nativeTimeout}, nativeRun, nativePath, mods, *jobs, logf)
		closeAll()
		if err != nil {
			return err
		}
	}
	if !*tableOnly && *strict {
		mods := pick(strictRun)
		logf("strict: %d modules, %d at once, %s each at most", len(mods), *jobs, *timeout)
		s, err := regrtest.NewStrict(lib, *timeout)
		if err != nil {
			return err
		}
		strictRun.Interpreter = "strict mode (python.wasm, CPython " + regrtest.DebianVersion + ")"
		strictRun.Machine, strictRun.Timeout = machine, timeout.Seconds()
		err = regrtest.RunSide(ctx, s, strictRun, strictPath, mods, *jobs, logf)
		s.Close()
		if err != nil {
			return err
		}
	}
	if len(strictRun.Modules) == 0 && len(nativeRun.Modules) == 0 {
		// Nothing to table: the committed table stays as it is.
		return fmt.Errorf("no results in %s: run make compat-cpython to make them (the table in %s is left as it is)", *results, *compat)
	}
	table := regrtest.Table(all, strictRun, nativeRun)
	if err := regrtest.UpdateFile(*compat, table); err != nil {
		return err
	}
	logf("wrote the table in %s (results in %s)", *compat, *results)
	return nil
}
