# Runs one module of CPython's regression tests (MODULE, a name under the
# `test` package, set by the harness in a line above this text) with
# unittest, as regrtest's single-process run does (test.libregrtest.single:
# import the module, load its tests, run them), without regrtest itself,
# which starts worker processes. The same script runs in strict mode and in
# native python3.13. It prints one line, RESULT_PREFIX and a JSON object:
# passed, failed (failures, errors and unexpected successes, by test), skipped,
# module_skip (the module skipped as a whole: SkipTest or ResourceDenied at
# import or in setUpModule), error (the module could not be imported or
# run), failures (the first lines of the first failures), exceptions
# (each failure's last traceback line, counted) and skips (the reasons
# tests were skipped, counted, the most frequent first).
import collections
import json
import os
import sys
import time
import traceback
import unittest

RESULT_PREFIX = "REGRTEST-RESULT "
MAX_FAILURES = 12
MAX_LINES = 6
MAX_CHARS = 600
MAX_EXCEPTIONS = 12
MAX_SKIPS = 5


def short(text):
    """The last MAX_LINES lines of a traceback, cut to MAX_CHARS."""
    lines = [l for l in text.rstrip().splitlines() if l.strip()]
    text = "\n".join(lines[-MAX_LINES:])
    return text if len(text) <= MAX_CHARS else "..." + text[-MAX_CHARS:]


def test_id(test):
    """The test's id, from its class: a test may shadow the method with
    an attribute of its own (test__interpreters does)."""
    return type(test).id(test)


def last_line(text):
    lines = [l for l in text.rstrip().splitlines() if l.strip()]
    return (lines[-1] if lines else "")[:200]


class Result(unittest.TestResult):
    """Each test's outcome by id: pass, fail or skip (a failed subtest
    fails its test; a skipped subtest does not skip it)."""

    def __init__(self):
        super().__init__()
        self.outcome = {}
        self.notes = []
        self.exceptions = collections.Counter()
        self.skips = collections.Counter()
        self.module_skip = ""

    def _fail(self, test, text):
        self.outcome[test_id(test)] = "fail"
        if len(self.notes) < MAX_FAILURES:
            self.notes.append(test_id(test) + ":\n" + short(text))
        self.exceptions[last_line(text)] += 1

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcome.setdefault(test_id(test), "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, self.errors[-1][1])

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._fail(test, self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.skips[str(reason)[:200]] += 1
        test = getattr(test, "test_case", test)
        if isinstance(test, unittest.suite._ErrorHolder) and test_id(test).startswith("setUpModule"):
            self.module_skip = "setUpModule: " + str(reason)
        self.outcome.setdefault(test_id(test), "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome.setdefault(test_id(test), "pass")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._fail(test, "unexpected success")


def run(name):
    out = {"module": name, "passed": 0, "failed": 0, "skipped": 0,
           "module_skip": "", "error": "", "failures": [], "exceptions": [], "skips": []}
    start = time.monotonic()
    try:
        from test import support
        from test.support.os_helper import FS_NONASCII, TESTFN_UNDECODABLE
        # What regrtest's setup_process does that needs no processes or
        # signals: the original stdout recorded, absolute module paths, the
        # non-ASCII environment variable its tests look for.
        support.record_original_stdout(sys.stdout)
        for module in list(sys.modules.values()):
            if isinstance(getattr(module, "__path__", None), list):
                module.__path__[:] = [os.path.abspath(p) for p in module.__path__]
            if isinstance(getattr(module, "__file__", None), str):
                module.__file__ = os.path.abspath(module.__file__)
        if TESTFN_UNDECODABLE and os.supports_bytes_environ:
            os.environb.setdefault(b"PYTHONREGRTEST_UNICODE_GUARD", TESTFN_UNDECODABLE)
        elif FS_NONASCII:
            os.environ.setdefault("PYTHONREGRTEST_UNICODE_GUARD", FS_NONASCII)
        # regrtest's defaults: not verbose, no -u resources (network,
        # cpu, largefile, ... tests skip with ResourceDenied).
        support.verbose = 0
        support.use_resources = []
        support.failfast = False
        support.junit_xml_list = None
        mod = __import__("test." + name, fromlist=["*"])
        suite = unittest.TestLoader().loadTestsFromModule(mod)
    except unittest.SkipTest as e:
        out["module_skip"] = type(e).__name__ + ": " + str(e)
        return out
    except BaseException:
        out["error"] = "import: " + short(traceback.format_exc())
        return out
    result = Result()
    try:
        suite.run(result)
    except BaseException:
        out["error"] = "run: " + short(traceback.format_exc())
    counts = collections.Counter(result.outcome.values())
    out.update(passed=counts["pass"], failed=counts["fail"], skipped=counts["skip"],
               module_skip=result.module_skip, failures=result.notes,
               exceptions=[{"line": line, "count": n} for line, n in result.exceptions.most_common(MAX_EXCEPTIONS)],
               skips=[{"line": line, "count": n} for line, n in result.skips.most_common(MAX_SKIPS)])
    if result.module_skip and counts["pass"] == 0 and counts["fail"] == 0:
        out["skipped"] = 0
    out["seconds"] = round(time.monotonic() - start, 3)
    return out


out = run(MODULE)  # noqa: F821 (set above this text)
stream = sys.__stdout__
stream.write("\n" + RESULT_PREFIX + json.dumps(out, sort_keys=True) + "\n")
stream.flush()
