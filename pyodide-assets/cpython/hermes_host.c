/* _hermes_host: the guest side of hermes-wasm-exec's tool channel.
 *
 * call(request: bytes) -> bytes hands one JSON request line to the host
 * through the wasm import hermes.call and returns the host's response line.
 * The host runs the tool synchronously, on the guest's own call: no file,
 * no polling. Responses that do not fit the static buffer are fetched with
 * hermes.take.
 */
#define PY_SSIZE_T_CLEAN
#include "Python.h"

#include <errno.h>
#include <stdint.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>
#include <wasi/api.h>
#include <wasi/libc-environ.h>

/* hermes.call(req, req_len, buf, buf_cap) -> response length, or -1 when
 * the host has no tool channel for this instance. Up to buf_cap bytes of
 * the response are written to buf; the rest waits for hermes.take. */
__attribute__((import_module("hermes"), import_name("call")))
extern int32_t hermes_call(const uint8_t *req, int32_t req_len, uint8_t *buf, int32_t buf_cap);

/* hermes.take(buf, len) -> bytes written: the whole pending response. */
__attribute__((import_module("hermes"), import_name("take")))
extern int32_t hermes_take(uint8_t *buf, int32_t len);

#define BUF_CAP (64 * 1024)
static uint8_t response_buf[BUF_CAP];

static PyObject *
hermes_host_call(PyObject *module, PyObject *arg)
{
    Py_buffer req;
    if (PyObject_GetBuffer(arg, &req, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (req.len > INT32_MAX) {
        PyBuffer_Release(&req);
        PyErr_SetString(PyExc_ValueError, "hermes_tools: request too large");
        return NULL;
    }
    int32_t n = hermes_call((const uint8_t *)req.buf, (int32_t)req.len, response_buf, BUF_CAP);
    PyBuffer_Release(&req);
    if (n < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "hermes_tools: this interpreter has no tool channel; "
                        "tools work only in a script run by hermes-wasm-exec");
        return NULL;
    }
    if (n <= BUF_CAP) {
        return PyBytes_FromStringAndSize((const char *)response_buf, n);
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL) {
        return NULL;
    }
    int32_t got = hermes_take((uint8_t *)PyBytes_AS_STRING(out), n);
    if (got != n) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_RuntimeError, "hermes_tools: short response from the host");
        return NULL;
    }
    return out;
}

/* ---- times() ------------------------------------------------------------
 *
 * wasi-libc's emulated times() reports clock()'s nanoseconds (its
 * CLOCKS_PER_SEC is 10^9), where POSIX wants clock ticks of
 * sysconf(_SC_CLK_TCK) (100 a second, as on Linux); CPython's os.times()
 * divides by that, so it read 10^7 times too large. This definition is the
 * one linked (an object's symbol keeps the linker from taking libc's member
 * of libwasi-emulated-process-clocks). User time is clock(): WASI has no
 * CPU clock, so it is the time since the interpreter started, as
 * time.process_time() reports it; system time and the children's times are
 * 0 (the guest starts no process). The result is the monotonic clock, in
 * ticks. */
clock_t
times(struct tms *buf)
{
    const clock_t per_tick = CLOCKS_PER_SEC / sysconf(_SC_CLK_TCK);
    __wasi_timestamp_t now = 0;
    __wasi_errno_t err = __wasi_clock_time_get(__WASI_CLOCKID_MONOTONIC, 0, &now);
    if (err != __WASI_ERRNO_SUCCESS) {
        errno = err;
        return (clock_t)-1;
    }
    *buf = (struct tms){.tms_utime = clock() / per_tick};
    return (clock_t)(now / (__wasi_timestamp_t)per_tick);
}

/* ---- Entry points ------------------------------------------------------
 *
 * The module is linked as a WASI reactor: the host calls _initialize (the
 * C constructors) and then one of these, instead of a command's _start.
 *
 * hermes_main runs the interpreter as _start would: main(argc, argv) with
 * the instance's arguments, then exit.
 *
 * hermes_preinit and hermes_run split that in two around a snapshot (see
 * runtime/internal/strict/snapshot.go). hermes_preinit initialises the interpreter
 * from the instance's arguments (python [options] -c CODE), runs CODE (the
 * imports worth keeping) and returns with the interpreter alive. The host
 * then copies the linear memory. Nothing else needs saving: the only
 * mutable global the code changes is the stack pointer, which is back at
 * its initial value once the call has returned. A later instance gets that
 * memory instead of running _initialize, and hermes_run takes it from
 * there with its own arguments and environment: the environment is read
 * again (libc's and os.environ) and the locale set from it, sys.argv,
 * sys.orig_argv and sys.path are set as the interpreter's start would have
 * set them (PYTHONPATH's entries made absolute as getpath does, first,
 * then '' unless -P), time's zone is set again from TZ, and a random
 * module imported by CODE is seeded again; then the -c command runs, the
 * interpreter is finalised and the instance exits with its status. (The
 * host gives a restored instance a monotonic clock that continues from
 * the snapshot's, so that libc's clock(), whose start a constructor
 * recorded in the snapshot, counts from there.)
 *
 * hermes_run accepts only the options the engine passes (-S, -u, -P and
 * -c CMD [ARGS]); -S and -u must have been given to hermes_preinit too,
 * since they take effect at initialisation. */

int __main_void(void);

__attribute__((export_name("hermes_main")))
void
hermes_main(void)
{
    exit(__main_void());
}

/* wasi_argv returns the instance's arguments, NULL-terminated, in
 * memory that is never freed (the process is short-lived). */
static char **
wasi_argv(int *argc)
{
    __wasi_size_t n, size;
    if (__wasi_args_sizes_get(&n, &size) != __WASI_ERRNO_SUCCESS) {
        return NULL;
    }
    char **argv = calloc(n + 1, sizeof(char *));
    char *buf = malloc(size ? size : 1);
    if (argv == NULL || buf == NULL) {
        return NULL;
    }
    if (__wasi_args_get((uint8_t **)argv, (uint8_t *)buf) != __WASI_ERRNO_SUCCESS) {
        return NULL;
    }
    *argc = (int)n;
    return argv;
}

static void
fatal(const char *what)
{
    fprintf(stderr, "hermes-wasm-exec interpreter: %s\n", what);
    exit(70);
}

__attribute__((export_name("hermes_preinit")))
int
hermes_preinit(void)
{
    int argc;
    char **argv = wasi_argv(&argc);
    if (argv == NULL) {
        fatal("cannot read the arguments");
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    PyStatus status = PyConfig_SetBytesArgv(&config, argc, argv);
    if (!PyStatus_Exception(status)) {
        status = PyConfig_Read(&config);
    }
    if (!PyStatus_Exception(status) && config.run_command == NULL) {
        status = PyStatus_Error("hermes_preinit needs -c CODE");
    }
    if (!PyStatus_Exception(status)) {
        status = Py_InitializeFromConfig(&config);
    }
    if (PyStatus_Exception(status)) {
        PyConfig_Clear(&config);
        fprintf(stderr, "hermes-wasm-exec interpreter: %s\n", status.err_msg ? status.err_msg : "initialisation failed");
        return 1;
    }
    PyObject *code = PyUnicode_FromWideChar(config.run_command, -1);
    PyConfig_Clear(&config);
    if (code == NULL) {
        PyErr_Print();
        return 1;
    }
    const char *utf8 = PyUnicode_AsUTF8(code);
    int ret = utf8 == NULL ? -1 : PyRun_SimpleString(utf8);
    Py_DECREF(code);
    return ret == 0 ? 0 : 1;
}

/* The part of hermes_run written in Python: _hermes_host._argv and
 * _hermes_host._environ hold what the C part read. */
static const char run_fixup[] =
    "def _hermes_fixup():\n"
    "    import sys, posix, _hermes_host\n"
    "    argv, safe_path = _hermes_host._argv, _hermes_host._safe_path\n"
    "    del _hermes_host._argv, _hermes_host._safe_path\n"
    "    sys.orig_argv = argv[0]\n"
    "    sys.argv = argv[1]\n"
    "    posix.environ.clear()\n"
    "    posix.environ.update(_hermes_host._environ)\n"
    "    del _hermes_host._environ\n"
    "    pythonpath = posix.environ.get(b'PYTHONPATH', b'').decode()\n"
    "    if pythonpath:\n"
    "        cwd = posix.getcwd()\n"
    "        sys.path[0:0] = [p if p.startswith('/') else cwd + '/' + p if p else cwd\n"
    "                         for p in pythonpath.split(':')]\n"
    "    if not safe_path:\n"
    "        sys.path.insert(0, '')\n"
    "    if 'time' in sys.modules:\n"
    "        sys.modules['time'].tzset()\n"
    "    if 'random' in sys.modules:\n"
    "        sys.modules['random'].seed()\n"
    "_hermes_fixup()\n"
    "del _hermes_fixup\n";

static int
set_fixup_inputs(int argc, char **argv, int cmd, int safe_path)
{
    PyObject *mod = PyImport_ImportModule("_hermes_host");
    if (mod == NULL) {
        return -1;
    }
    PyObject *orig = PyList_New(0), *args = PyList_New(0), *env = PyDict_New();
    int ok = orig != NULL && args != NULL && env != NULL;
    for (int i = 0; ok && i < argc; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);
        ok = s != NULL && PyList_Append(orig, s) == 0;
        if (ok && (i == cmd - 1 || i > cmd)) {
            /* sys.argv of `python -c CMD ARGS` is ['-c', ARGS...]. */
            ok = PyList_Append(args, s) == 0;
        }
        Py_XDECREF(s);
    }
    char **environ_ = __wasilibc_get_environ();
    for (char **e = environ_; ok && e != NULL && *e != NULL; e++) {
        char *eq = strchr(*e, '=');
        if (eq == NULL || eq == *e) {
            continue;
        }
        PyObject *k = PyBytes_FromStringAndSize(*e, eq - *e);
        PyObject *v = PyBytes_FromString(eq + 1);
        ok = k != NULL && v != NULL && PyDict_SetItem(env, k, v) == 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    if (ok) {
        PyObject *pair = Py_BuildValue("(OO)", orig, args);
        ok = pair != NULL &&
             PyObject_SetAttrString(mod, "_argv", pair) == 0 &&
             PyObject_SetAttrString(mod, "_safe_path", safe_path ? Py_True : Py_False) == 0 &&
             PyObject_SetAttrString(mod, "_environ", env) == 0;
        Py_XDECREF(pair);
    }
    Py_XDECREF(orig);
    Py_XDECREF(args);
    Py_XDECREF(env);
    Py_DECREF(mod);
    return ok ? 0 : -1;
}

/* restored_setup prepares an interpreter restored from a snapshot for
 * this instance (hermes_run's first part) and returns the index of its
 * -c command in argv. */
static int
restored_setup(int *argc_out, char ***argv_out)
{
    /* The environment libc read in the snapshot's instance is not this
     * one's, nor is the locale the interpreter's start set from it. */
    __wasilibc_deinitialize_environ();
    __wasilibc_ensure_environ();
    setlocale(LC_CTYPE, "");
    int argc;
    char **argv = wasi_argv(&argc);
    if (argv == NULL) {
        fatal("cannot read the arguments");
    }
    int cmd = 0, safe_path = 0;
    for (int i = 1; i < argc && cmd == 0; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            cmd = i + 1;
        } else if (strcmp(argv[i], "-P") == 0) {
            safe_path = 1;
        } else if (strcmp(argv[i], "-S") != 0 && strcmp(argv[i], "-u") != 0) {
            fatal("hermes_run: unsupported argument before -c CMD");
        }
    }
    if (cmd == 0) {
        fatal("hermes_run: no -c CMD");
    }
    if (set_fixup_inputs(argc, argv, cmd, safe_path) < 0) {
        PyErr_Print();
        fatal("hermes_run: cannot set up the restored interpreter");
    }
    if (PyRun_SimpleString(run_fixup) != 0) {
        fatal("hermes_run: cannot set up the restored interpreter");
    }
    *argc_out = argc;
    *argv_out = argv;
    return cmd;
}

/* finish finalises the interpreter and exits with status (120 when the
 * finalisation fails), as the interpreter's own main does. */
static void
finish(int status)
{
    if (Py_FinalizeEx() < 0) {
        status = 120;
    }
    exit(status);
}

__attribute__((export_name("hermes_run")))
void
hermes_run(void)
{
    int argc;
    char **argv;
    int cmd = restored_setup(&argc, &argv);
    PyCompilerFlags cf = _PyCompilerFlags_INIT;
    finish(PyRun_SimpleStringFlags(argv[cmd], &cf) != 0);
}

/* A session kernel runs in steps (runtime/internal/strict/kernel.go), so
 * that between its cells no call into the module is in progress: the
 * instance is then described by its linear memory alone, as a snapshot
 * is, and can be suspended and resumed.
 *
 * hermes_keep is hermes_run whose -c command (the kernel's start) leaves
 * the interpreter alive: it returns when the command succeeded, and
 * finalises and exits with status 1 when it raised. (A kernel started in
 * full, not from the snapshot, runs its loop in hermes_main instead.) */
__attribute__((export_name("hermes_keep")))
void
hermes_keep(void)
{
    int argc;
    char **argv;
    int cmd = restored_setup(&argc, &argv);
    PyCompilerFlags cf = _PyCompilerFlags_INIT;
    if (PyRun_SimpleStringFlags(argv[cmd], &cf) != 0) {
        finish(1);
    }
}

/* kernel_step is _hermes_kernel.step, looked up at the first step (a
 * suspended kernel's memory keeps it). */
static PyObject *kernel_step;

/* hermes_step runs one step of the kernel: _hermes_kernel.step(), which
 * takes the cell the host holds, runs it and returns True, or returns
 * False when the host said close. hermes_step returns 1 or 0 for them.
 * An exception out of step itself (not a cell's: the step reports those)
 * is printed and ends the instance with status 1; a cell's SystemExit
 * ends it with the cell's status (os._exit in the step). */
__attribute__((export_name("hermes_step")))
int
hermes_step(void)
{
    if (kernel_step == NULL) {
        PyObject *mod = PyImport_ImportModule("_hermes_kernel");
        if (mod != NULL) {
            kernel_step = PyObject_GetAttrString(mod, "step");
            Py_DECREF(mod);
        }
        if (kernel_step == NULL) {
            PyErr_Print();
            finish(1);
        }
    }
    PyObject *more = PyObject_CallNoArgs(kernel_step);
    if (more == NULL) {
        PyErr_Print();
        finish(1);
    }
    int ret = PyObject_IsTrue(more);
    Py_DECREF(more);
    return ret > 0;
}

/* hermes_end ends a kernel run in steps: it finalises the interpreter (its
 * atexit functions run) and exits with status 0. */
__attribute__((export_name("hermes_end")))
void
hermes_end(void)
{
    finish(0);
}

static PyMethodDef hermes_host_methods[] = {
    {"call", hermes_host_call, METH_O,
     "call(request: bytes) -> bytes\n\nSend one request line to the host and return its response line."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef hermes_host_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_hermes_host",
    .m_doc = "hermes-wasm-exec's host-function tool channel.",
    .m_size = 0,
    .m_methods = hermes_host_methods,
};

PyMODINIT_FUNC
PyInit__hermes_host(void)
{
    return PyModuleDef_Init(&hermes_host_module);
}
