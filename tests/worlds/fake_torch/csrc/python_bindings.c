/* The last library to build (torch's libtorch_python comes late too). */
int fake_torch_op_01(int);

int fake_torch_python_init(void) { return fake_torch_op_01(1); }
