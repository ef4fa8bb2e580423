// The device functions main.cu takes the addresses of (simpleSeparateCompilation's
// deviceDefinitions.cu shape).
__device__ float multiplyByTwo(float number) { return number * 2.0f; }
__device__ float divideByTwo(float number) { return number * 0.5f; }
