// Does %nsmid equal the device's SM count (the worker count of the
// persistent wgmma prefill kernel) and are %smid values contiguous?
//   nvcc -arch=sm_90a nsmid_probe.cu -o /tmp/nsmid && /tmp/nsmid
#include <cstdio>
#include <set>
#include <vector>

__global__ void probe(unsigned *smid, unsigned *nsmid) {
  unsigned id, n;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  smid[blockIdx.x] = id;
  nsmid[blockIdx.x] = n;
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int blocks = 16 * prop.multiProcessorCount;
  unsigned *smid, *nsmid;
  cudaMalloc(&smid, blocks * sizeof(unsigned));
  cudaMalloc(&nsmid, blocks * sizeof(unsigned));
  probe<<<blocks, 32>>>(smid, nsmid);
  std::vector<unsigned> ids(blocks), ns(blocks);
  cudaMemcpy(ids.data(), smid, blocks * sizeof(unsigned), cudaMemcpyDefault);
  cudaError_t err =
      cudaMemcpy(ns.data(), nsmid, blocks * sizeof(unsigned), cudaMemcpyDefault);
  if (err == cudaSuccess)
    err = cudaGetLastError();
  if (err != cudaSuccess) {
    fprintf(stderr, "nsmid probe: %s\n", cudaGetErrorString(err));
    return 1;
  }
  std::set<unsigned> distinct(ids.begin(), ids.end()), nDistinct(ns.begin(), ns.end());
  printf("{\"device\": \"%s\", \"multiProcessorCount\": %d, \"nsmid\": [", prop.name,
         prop.multiProcessorCount);
  for (unsigned n : nDistinct)
    printf("%u%s", n, n == *nDistinct.rbegin() ? "" : ", ");
  printf("], \"distinct_smid\": %zu, \"max_smid\": %u}\n", distinct.size(),
         *distinct.rbegin());
  return 0;
}
