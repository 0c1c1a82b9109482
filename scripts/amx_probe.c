/* Does this machine let a process run AMX tile instructions?  Prints "granted" and exits 0
 * if so; a machine that lists AMX but does not allow it kills this process with SIGILL,
 * which is why it runs as a child of whoever asks (never inside the judge's process).
 *
 * It asks Linux for the tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM), loads a
 * valid tile configuration, and multiplies two small int8 tiles, checking the result. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

struct tile_config {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

/* static: a stack copy's stores can be dropped as dead by gcc (see llama-amx.patch) */
static struct tile_config config __attribute__((aligned(64)));
static int8_t a[16 * 64], b[16 * 64];
static int32_t c[16 * 16];

int main(void) {
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        puts("refused: the kernel denied the AMX tile-data permission");
        return 1;
    }
    memset(&config, 0, sizeof config);
    config.palette_id = 1;
    for (int t = 0; t < 3; t++) {
        config.rows[t] = 16;
        config.colsb[t] = 64;
    }
    for (int i = 0; i < 16 * 64; i++) {
        a[i] = 1;
        b[i] = 2;
    }
    _tile_loadconfig(&config);
    _tile_zero(0);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
    if (c[0] != 128 || c[255] != 128) {
        printf("refused: a tile multiply gave %d, not 128\n", c[0]);
        return 1;
    }
    puts("granted");
    return 0;
}
