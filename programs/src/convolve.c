/*
 * convolve: filters a generated greyscale image with 3x3 kernels (box blur,
 * sharpen, Sobel edge magnitude), clamps the results, then thresholds and
 * builds a histogram. The image width and height come from the arguments,
 * so the inner loops run a trip count that is fixed for each execution of
 * the loop but not a compile-time constant.
 *
 * Exercises: nested loops whose trip counts are loop-invariant inputs,
 * constant-trip kernel loops, if-else chains inside loops (clamping,
 * border handling, thresholds), integer multiply and divide.
 *
 * Arguments: [width = 128] [height = 96] [passes = 3] [seed = 21]
 */
#include "common.h"

static const int32_t kernels[3][3][3] = {
    { { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 } },       /* box blur, divide by 9 */
    { { 0, -1, 0 }, { -1, 5, -1 }, { 0, -1, 0 } },    /* sharpen */
    { { -1, 0, 1 }, { -2, 0, 2 }, { -1, 0, 1 } },     /* Sobel x (y is its transpose) */
};

static uint8_t pixel(const uint8_t *img, int w, int h, int x, int y)
{
    /* clamp to the border */
    if (x < 0)
        x = 0;
    else if (x >= w)
        x = w - 1;
    if (y < 0)
        y = 0;
    else if (y >= h)
        y = h - 1;
    return img[y * w + x];
}

static uint8_t clamp(int32_t v)
{
    if (v < 0)
        return 0;
    if (v > 255)
        return 255;
    return (uint8_t)v;
}

static void filter(const uint8_t *in, uint8_t *out, int w, int h, int which)
{
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            int32_t acc = 0, acc2 = 0;
            int border = x == 0 || y == 0 || x == w - 1 || y == h - 1;
            for (int ky = 0; ky < 3; ky++) {
                for (int kx = 0; kx < 3; kx++) {
                    int32_t p = border ? pixel(in, w, h, x + kx - 1, y + ky - 1)
                                       : in[(y + ky - 1) * w + (x + kx - 1)];
                    acc += p * kernels[which][ky][kx];
                    if (which == 2)
                        acc2 += p * kernels[2][kx][ky];
                }
            }
            if (which == 0)
                out[y * w + x] = (uint8_t)(acc / 9);
            else if (which == 1)
                out[y * w + x] = clamp(acc);
            else
                out[y * w + x] = clamp((acc < 0 ? -acc : acc) / 2 + (acc2 < 0 ? -acc2 : acc2) / 2);
        }
    }
}

int main(int argc, char **argv)
{
    int w = (int)arg_u32(argc, argv, 0, 128);
    int h = (int)arg_u32(argc, argv, 1, 96);
    uint32_t passes = arg_u32(argc, argv, 2, 3);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 3, 21));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    if (w < 1)
        w = 1;
    if (h < 1)
        h = 1;
    uint8_t *a = malloc((size_t)w * (size_t)h);
    uint8_t *b = malloc((size_t)w * (size_t)h);
    if (a == 0 || b == 0) {
        printf("convolve: out of memory\n");
        return 99;
    }
    /* a smooth gradient with circles and noise */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int dx = x - w / 2, dy = y - h / 3;
            uint32_t v = (uint32_t)(x * 255 / w + y * 128 / h) / 2;
            if (dx * dx + dy * dy < (w * w) / 16)
                v = 220;
            else if ((x / 8 + y / 8) % 5 == 0)
                v = 40;
            v += rng_next(&rng) & 15u;
            a[y * w + x] = (uint8_t)(v > 255 ? 255 : v);
        }

    uint32_t hist[4] = { 0, 0, 0, 0 };
    for (uint32_t p = 0; p < passes; p++) {
        filter(a, b, w, h, 0);
        filter(b, a, w, h, 1);
        filter(a, b, w, h, 2);
        for (int i = 0; i < w * h; i++) {
            uint8_t v = b[i];
            if (v < 32)
                hist[0]++;
            else if (v < 96)
                hist[1]++;
            else if (v < 192)
                hist[2]++;
            else
                hist[3]++;
            /* mix the edges back in so passes differ */
            a[i] = (uint8_t)((a[i] * 3u + v) / 4u);
        }
        uint32_t h2 = 0;
        for (int i = 0; i < w * h; i++)
            h2 = h2 * 31u + a[i];
        sum_add(&sum, h2);
    }
    if (hist[0] + hist[1] + hist[2] + hist[3] != passes * (uint32_t)w * (uint32_t)h)
        failed = 1;
    printf("convolve: %dx%d, %u passes, edge histogram %u %u %u %u\n", w, h, (unsigned)passes,
           (unsigned)hist[0], (unsigned)hist[1], (unsigned)hist[2], (unsigned)hist[3]);
    free(b);
    free(a);
    return finish("convolve", sum.h, failed);
}
