// The MPI process group of the fake torch, where torch has its own: only built when CMake found MPI.
#include <mpi.h>

extern "C" int fake_torch_mpi_available(void) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return 1;
}
