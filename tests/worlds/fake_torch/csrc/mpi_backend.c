/* The MPI process group of the fake torch: only built when CMake found MPI. */
#include <mpi.h>

int fake_torch_mpi_available(void) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return 1;
}
