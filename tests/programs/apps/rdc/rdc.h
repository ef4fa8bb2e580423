// A template device function both main.cu and data.cu instantiate: with -rdc each unit's PTX
// defines it .weak, and the link keeps one.
template <typename T> __device__ __noinline__ T twice_of(T x) { return x + x; }
