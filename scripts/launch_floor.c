/* The driver's own cost of a launch on this host: a pure-C floor for issue 14's launch target.
 *
 *   cc -O2 -o launch_floor scripts/launch_floor.c -ldl && ./launch_floor [launches] [reps]
 *
 * Loads libcuda.so.1 with dlopen (no CUDA headers or toolkit needed), makes device 0's primary
 * context current, loads two kernels with empty bodies with cuModuleLoadData (PTX text, which
 * the driver JIT-compiles to a cubin for the GPU; the launch cost is that of any loaded module):
 * `empty2(u64, u32)` and `empty5(u64, u64, u64, u64, u32)` (the parameters of the 4-tensor + int
 * row of benchmarks/launch_overhead.py). Then, per kernel, on the legacy default stream
 * (stream 0, as torch's default current stream), grid 8 x block 128 as that row:
 *   - `launches` cuLaunchKernel calls in a loop, timed to the end of the loop and to the end of
 *     cuCtxSynchronize, `reps` times: median and minimum in microseconds per call (the queue
 *     fills after ~1000 launches, so the loop can be no faster than the GPU runs them);
 *   - 200-launch batches (below the launch queue's depth), each drained with cuCtxSynchronize
 *     outside the timing, 50 times: median and minimum of the enqueue time per call.
 * Errors print the driver's code and exit 1. CUDA Driver API: cuInit, cuDeviceGet,
 * cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuModuleLoadData, cuModuleGetFunction,
 * cuLaunchKernel, cuCtxSynchronize. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*init_t)(unsigned);
typedef int (*device_get_t)(int *, int);
typedef int (*retain_t)(void **, int);
typedef int (*set_current_t)(void *);
typedef int (*load_t)(void **, const void *);
typedef int (*get_function_t)(void **, void *, const char *);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
typedef int (*sync_t)(void);

static const char *PTX =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry empty2(.param .u64 a, .param .u32 n)\n{\n ret;\n}\n"
    ".visible .entry empty5(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d,"
    " .param .u32 n)\n{\n ret;\n}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define CHECK(what, call) do { int rc_ = (call); if (rc_) { \
    fprintf(stderr, "launch_floor: %s failed: CUresult %d\n", what, rc_); exit(1); } } while (0)

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "launch_floor: libcuda has no %s\n", name); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 5;
    if (launches < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "launch_floor: expected launches >= 1 and 1 <= reps <= 1000, got %d %d\n"
                "Fix: ./launch_floor 20000 5\n", launches, reps);
        return 2;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "launch_floor: %s\n", dlerror()); return 1; }
    init_t cuInit = (init_t)sym(lib, "cuInit");
    device_get_t cuDeviceGet = (device_get_t)sym(lib, "cuDeviceGet");
    retain_t cuDevicePrimaryCtxRetain = (retain_t)sym(lib, "cuDevicePrimaryCtxRetain");
    set_current_t cuCtxSetCurrent = (set_current_t)sym(lib, "cuCtxSetCurrent");
    load_t cuModuleLoadData = (load_t)sym(lib, "cuModuleLoadData");
    get_function_t cuModuleGetFunction = (get_function_t)sym(lib, "cuModuleGetFunction");
    launch_t cuLaunchKernel = (launch_t)sym(lib, "cuLaunchKernel");
    sync_t cuCtxSynchronize = (sync_t)sym(lib, "cuCtxSynchronize");
    int dev;
    void *ctx, *module, *fns[2];
    CHECK("cuInit", cuInit(0));
    CHECK("cuDeviceGet", cuDeviceGet(&dev, 0));
    CHECK("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    CHECK("cuModuleLoadData", cuModuleLoadData(&module, PTX));
    CHECK("cuModuleGetFunction empty2", cuModuleGetFunction(&fns[0], module, "empty2"));
    CHECK("cuModuleGetFunction empty5", cuModuleGetFunction(&fns[1], module, "empty5"));
    uint64_t ptrs[4] = {0, 0, 0, 0};
    uint32_t n = 1024;
    void *params2[2] = {&ptrs[0], &n};
    void *params5[5] = {&ptrs[0], &ptrs[1], &ptrs[2], &ptrs[3], &n};
    void **params[2] = {params2, params5};
    const char *names[2] = {"empty2(u64, u32)", "empty5(4 x u64, u32)"};
    double loop[1000], synced[1000], small[50];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 1000; i++)          /* warm-up */
            CHECK("cuLaunchKernel", cuLaunchKernel(fns[k], 8, 1, 1, 128, 1, 1, 0, 0, params[k], 0));
        CHECK("cuCtxSynchronize", cuCtxSynchronize());
        for (int r = 0; r < reps; r++) {
            double t0 = now_us();
            for (int i = 0; i < launches; i++)
                CHECK("cuLaunchKernel",
                      cuLaunchKernel(fns[k], 8, 1, 1, 128, 1, 1, 0, 0, params[k], 0));
            double t1 = now_us();
            CHECK("cuCtxSynchronize", cuCtxSynchronize());
            double t2 = now_us();
            loop[r] = (t1 - t0) / launches;
            synced[r] = (t2 - t0) / launches;
        }
        for (int r = 0; r < 50; r++) {
            double t0 = now_us();
            for (int i = 0; i < 200; i++)
                CHECK("cuLaunchKernel",
                      cuLaunchKernel(fns[k], 8, 1, 1, 128, 1, 1, 0, 0, params[k], 0));
            small[r] = (now_us() - t0) / 200;
            CHECK("cuCtxSynchronize", cuCtxSynchronize());
        }
        double lo_loop = loop[0], lo_sync = synced[0], lo_small = small[0];
        for (int r = 1; r < reps; r++) {
            if (loop[r] < lo_loop) lo_loop = loop[r];
            if (synced[r] < lo_sync) lo_sync = synced[r];
        }
        for (int r = 1; r < 50; r++)
            if (small[r] < lo_small) lo_small = small[r];
        printf("C floor %-22s %d x %d launches: loop %.3f us (min %.3f), to sync %.3f us "
               "(min %.3f); 50 x 200 below the queue: %.3f us (min %.3f)\n", names[k], reps,
               launches, median(loop, reps), lo_loop, median(synced, reps), lo_sync,
               median(small, 50), lo_small);
    }
    return 0;
}
