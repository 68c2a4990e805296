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

#include <stdint.h>

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
