/*
 * initcheck_bulk.cu - does compute-sanitizer's initcheck see stores made by
 * the tensor memory accelerator's bulk copies (cp.async.bulk, shared to
 * global), the way Hopper's cuBLASLt kernels store D?  (docs/testing.md,
 * "initcheck, and the sanitizers on random graphs".)
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a tests/runtime/initcheck_bulk.cu -o initcheck_bulk
 *   compute-sanitizer --tool initcheck ./initcheck_bulk
 *
 * Two fresh buffers are filled with 0 .. N-1, one by plain stores from
 * registers, one by a bulk copy from shared memory; a third kernel then
 * reads each and sums it.  Both sums must be N (N - 1) / 2 (exit 1 if
 * not): the values are there.  Under initcheck, reports for reads of the
 * second buffer's addresses alone mean the tool does not see bulk stores.
 * On the H200 (docs/testing.md): both sums right; initcheck reported 4,088
 * uninitialized reads, all from one of the two sum launches, none for the
 * other (the run before the addresses were printed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

enum { N = 4096 };      /* 16 KB of floats: one bulk copy */

static void check(cudaError_t e, const char *call)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "initcheck_bulk: %s: %s\n", call, cudaGetErrorString(e));
		exit(2);
	}
}
#define CK(call) check((call), #call)

__global__ void plain_store(float *d)
{
	for (int i = threadIdx.x; i < N; i += blockDim.x)
		d[i] = (float)i;
}

__global__ void bulk_store(float *d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	__shared__ __align__(128) float s[N];
	for (int i = threadIdx.x; i < N; i += blockDim.x)
		s[i] = (float)i;
	/* the generic-proxy writes above, visible to the async proxy */
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	__syncthreads();
	if (threadIdx.x == 0) {
		const uint32_t src = (uint32_t)__cvta_generic_to_shared(s);
		asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
			     ::"l"(d), "r"(src), "r"((int)(N * sizeof(float))) : "memory");
		asm volatile("cp.async.bulk.commit_group;" ::: "memory");
		asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
	}
#else
	__trap();
#endif
}

__global__ void sum(const float *d, double *out)
{
	double s = 0;
	for (int i = 0; i < N; i++)
		s += d[i];
	*out = s;
}

int main(void)
{
	float *plain, *bulk;
	double *sums, host[2];
	CK(cudaMalloc(&plain, N * sizeof(float)));
	CK(cudaMalloc(&bulk, N * sizeof(float)));
	CK(cudaMalloc(&sums, 2 * sizeof(double)));
	plain_store<<<1, 256>>>(plain);
	bulk_store<<<1, 256>>>(bulk);
	CK(cudaDeviceSynchronize());
	sum<<<1, 1>>>(plain, sums);
	CK(cudaDeviceSynchronize());
	sum<<<1, 1>>>(bulk, sums + 1);
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
	const double want = (double)N * (N - 1) / 2;
	printf("plain stores at %p: sum %.0f; bulk stores at %p: sum %.0f (want %.0f)\n", (void *)plain, host[0],
	       (void *)bulk, host[1], want);
	CK(cudaFree(plain));
	CK(cudaFree(bulk));
	CK(cudaFree(sums));
	return host[0] == want && host[1] == want ? 0 : 1;
}
