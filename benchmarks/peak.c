/* The machine's own arithmetic ceiling, measured: register-resident loops of one kind of
 * multiply-add on every core, no memory traffic. Built and run by judge_limit.py, one
 * kernel per child process (a kernel the machine does not allow dies alone).
 *
 *   peak KERNEL THREADS SECONDS  ->  prints "KERNEL GOPS" (multiply and add counted apart)
 *
 * KERNEL: fp32-avx2 (FMA), fp32-avx512, int8-avx2, int8-avxvnni, int8-avx512vnni, int8-amx, bf16-amx. */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define ACC 12
static volatile float sink_f;
static volatile int sink_i;

__attribute__((target("avx2,fma"))) static double fp32_avx2(long n) {
    __m256 acc[ACC], x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
    for (int k = 0; k < ACC; k++) acc[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < n; i++)
        for (int k = 0; k < ACC; k++) acc[k] = _mm256_fmadd_ps(acc[k], x, y);
    float s[8];
    for (int k = 1; k < ACC; k++) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    _mm256_storeu_ps(s, acc[0]);
    sink_f = s[0];
    return (double)n * ACC * 8 * 2;
}

__attribute__((target("avx512f"))) static double fp32_avx512(long n) {
    __m512 acc[ACC], x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
    for (int k = 0; k < ACC; k++) acc[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < n; i++)
        for (int k = 0; k < ACC; k++) acc[k] = _mm512_fmadd_ps(acc[k], x, y);
    for (int k = 1; k < ACC; k++) acc[0] = _mm512_add_ps(acc[0], acc[k]);
    sink_f = _mm512_reduce_add_ps(acc[0]);
    return (double)n * ACC * 16 * 2;
}

/* AVX2 has no int8 dot product: llama.cpp multiplies unsigned by signed bytes into pairs of
 * int16 (vpmaddubsw), then sums pairs into int32 (vpmaddwd): two instructions per 32 products.
 * Each product reads its own accumulator, or the compiler would hoist it out of the loop. */
__attribute__((target("avx2"))) static double int8_avx2(long n) {
    __m256i acc[ACC], y = _mm256_set1_epi8(5), ones = _mm256_set1_epi16(1);
    for (int k = 0; k < ACC; k++) acc[k] = _mm256_set1_epi32(k);
    for (long i = 0; i < n; i++)
        for (int k = 0; k < ACC; k++)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(acc[k], y), ones));
    for (int k = 1; k < ACC; k++) acc[0] = _mm256_add_epi32(acc[0], acc[k]);
    sink_i = _mm256_extract_epi32(acc[0], 0);
    return (double)n * ACC * 32 * 2;
}

__attribute__((target("avx2,avxvnni"))) static double int8_avxvnni(long n) {
    __m256i acc[ACC], x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(5);
    for (int k = 0; k < ACC; k++) acc[k] = _mm256_set1_epi32(k);
    for (long i = 0; i < n; i++)
        for (int k = 0; k < ACC; k++) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], x, y);
    for (int k = 1; k < ACC; k++) acc[0] = _mm256_add_epi32(acc[0], acc[k]);
    sink_i = _mm256_extract_epi32(acc[0], 0);
    return (double)n * ACC * 32 * 2;
}

__attribute__((target("avx512f,avx512vnni"))) static double int8_avx512vnni(long n) {
    __m512i acc[ACC], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(5);
    for (int k = 0; k < ACC; k++) acc[k] = _mm512_set1_epi32(k);
    for (long i = 0; i < n; i++)
        for (int k = 0; k < ACC; k++) acc[k] = _mm512_dpbusd_epi32(acc[k], x, y);
    for (int k = 1; k < ACC; k++) acc[0] = _mm512_add_epi32(acc[0], acc[k]);
    sink_i = _mm512_reduce_add_epi32(acc[0]);
    return (double)n * ACC * 64 * 2;
}

struct tile_config {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};
static struct tile_config config __attribute__((aligned(64)));
static int8_t tile_a[16 * 64] __attribute__((aligned(64))), tile_b[16 * 64] __attribute__((aligned(64)));

/* Four tile products a step into four accumulators, from tiles already loaded: INT8
 * (64 products a 4-byte cell) or BF16 (32 a cell, float sums). */
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) static double amx(long n, int bf16) {
    _tile_loadconfig(&config);
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, tile_a, 64); _tile_loadd(5, tile_a, 64);
    _tile_loadd(6, tile_b, 64); _tile_loadd(7, tile_b, 64);
    if (bf16)
        for (long i = 0; i < n; i++) {
            _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
        }
    else
        for (long i = 0; i < n; i++) {
            _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7); _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7);
        }
    static int32_t out[16 * 16];
    _tile_stored(0, out, 64);
    _tile_release();
    sink_i = out[0];
    return (double)n * 4 * 16 * 16 * (bf16 ? 32 : 64) * 2;
}
static double int8_amx(long n) { return amx(n, 0); }
static double bf16_amx(long n) { return amx(n, 1); }

typedef double (*kernel_fn)(long);
struct job { kernel_fn fn; long n; double ops; };
static void *run(void *arg) { struct job *j = arg; j->ops = j->fn(j->n); return NULL; }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: peak KERNEL THREADS SECONDS\n"); return 2; }
    const char *name = argv[1];
    int threads = atoi(argv[2]);
    double seconds = atof(argv[3]);
    kernel_fn fn = NULL;
    if (!strcmp(name, "fp32-avx2")) fn = fp32_avx2;
    else if (!strcmp(name, "fp32-avx512")) fn = fp32_avx512;
    else if (!strcmp(name, "int8-avx2")) fn = int8_avx2;
    else if (!strcmp(name, "int8-avxvnni")) fn = int8_avxvnni;
    else if (!strcmp(name, "int8-avx512vnni")) fn = int8_avx512vnni;
    else if (!strcmp(name, "int8-amx") || !strcmp(name, "bf16-amx")) {
        if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) { puts("refused"); return 1; }
        config.palette_id = 1;
        for (int t = 0; t < 8; t++) { config.rows[t] = 16; config.colsb[t] = 64; }
        fn = strcmp(name, "int8-amx") ? bf16_amx : int8_amx;
    }
    if (!fn || threads < 1) { fprintf(stderr, "unknown kernel %s\n", name); return 2; }
    long n = 1000;  /* calibrate on one thread: about 50 ms */
    for (;;) { double t = now(); fn(n); if (now() - t > 0.05) break; n *= 2; }
    double t0 = now(); fn(n); double per = now() - t0;
    n = (long)(n * seconds / per) + 1;
    pthread_t tid[64];
    struct job jobs[64];
    if (threads > 64) threads = 64;
    double start = now();
    for (int i = 0; i < threads; i++) { jobs[i].fn = fn; jobs[i].n = n; pthread_create(&tid[i], NULL, run, &jobs[i]); }
    double ops = 0;
    for (int i = 0; i < threads; i++) { pthread_join(tid[i], NULL); ops += jobs[i].ops; }
    printf("%s %.1f\n", name, ops / (now() - start) / 1e9);
    return 0;
}
