/* The fixture extension's module: one function, calling into the greet submodule's C file. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "greet.h"

static PyObject *tiny_greet(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyUnicode_FromString(greet_text());
}

static PyMethodDef methods[] = {{"greet", tiny_greet, METH_NOARGS, "A greeting from C."}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tiny", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tiny(void) { return PyModule_Create(&module); }
