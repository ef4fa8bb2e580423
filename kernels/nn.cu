// Rodinia NN: nearest neighbour, the distance of every record to a target point.
// Port of Rodinia 3.1 nn/nn_cuda.cu `euclid`. Launch: block (256,1,1), a 1-D or 2-D grid
// (x * y * 256 >= numRecords); the host then picks the k smallest distances.

typedef struct latLong {
    float lat;
    float lng;
} LatLong;

// d_distances[i] = sqrt((lat - loc[i].lat)^2 + (lng - loc[i].lng)^2) for i < numRecords.
extern "C" __global__ void euclid(LatLong *d_locations, float *d_distances, int numRecords,
                                  float lat, float lng)
{
    int globalId = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x;
    LatLong *latLong = d_locations + globalId;
    if (globalId < numRecords) {
        float *dist = d_distances + globalId;
        *dist = (float)sqrt((lat - latLong->lat) * (lat - latLong->lat) +
                            (lng - latLong->lng) * (lng - latLong->lng));
    }
}
