// CK(call): a runtime API call that must succeed; otherwise print its error and return 1.
#ifndef RT_CHECK_H
#define RT_CHECK_H
#include <cstdio>

#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            printf("%s: %s (%s)\n", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

#endif
