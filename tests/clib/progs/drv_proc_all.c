/* cuGetProcAddress finds every entry point: for each argument pair BASE SYMBOL, the lookup
 * of BASE at CUDA 13.0 must give the exported SYMBOL (the newest versioned form).  Prints
 * each miss and "proc_all ok N" when every one is found. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        void *fn = NULL, *want = dlsym(RTLD_DEFAULT, argv[i + 1]);
        CUdriverProcAddressQueryResult st;
        CUresult r = cuGetProcAddress(argv[i], &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
        if (r != CUDA_SUCCESS || !want || fn != want) {
            printf("missing %s (%s)\n", argv[i], argv[i + 1]);
            bad = 1;
        }
    }
    if (!bad)
        printf("proc_all ok %d\n", (argc - 1) / 2);
    return bad;
}
