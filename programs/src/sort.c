/*
 * sort: quicksort with an insertion-sort cut-off, sorting pseudo-random keys
 * through a comparison function pointer, then checking the order and
 * binary-searching for keys.
 *
 * Exercises: recursion, calls through function pointers, data-dependent
 * branches, loops with input-dependent trip counts, early return out of a
 * search loop, malloc/free.
 *
 * Arguments: [n = 20000] [rounds = 12] [seed = 1]
 */
#include "common.h"

typedef int (*cmp_fn)(uint32_t, uint32_t);

static int cmp_up(uint32_t a, uint32_t b)
{
    return a < b ? -1 : (a > b ? 1 : 0);
}

static int cmp_down(uint32_t a, uint32_t b)
{
    return a > b ? -1 : (a < b ? 1 : 0);
}

/* Compare by the low 16 bits first, then by the whole key. */
static int cmp_low(uint32_t a, uint32_t b)
{
    uint32_t la = a & 0xffffu, lb = b & 0xffffu;
    if (la != lb)
        return la < lb ? -1 : 1;
    return cmp_up(a, b);
}

static void insertion_sort(uint32_t *a, int n, cmp_fn cmp)
{
    for (int i = 1; i < n; i++) {
        uint32_t v = a[i];
        int j = i - 1;
        while (j >= 0 && cmp(a[j], v) > 0) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static void swap(uint32_t *a, int i, int j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void quick_sort(uint32_t *a, int n, cmp_fn cmp)
{
    while (n > 16) {
        int mid = n / 2;
        /* median of three into a[mid] */
        if (cmp(a[0], a[mid]) > 0)
            swap(a, 0, mid);
        if (cmp(a[mid], a[n - 1]) > 0)
            swap(a, mid, n - 1);
        if (cmp(a[0], a[mid]) > 0)
            swap(a, 0, mid);
        uint32_t pivot = a[mid];
        int i = 0, j = n - 1;
        for (;;) {
            while (cmp(a[i], pivot) < 0)
                i++;
            while (cmp(a[j], pivot) > 0)
                j--;
            if (i >= j)
                break;
            swap(a, i, j);
            i++;
            j--;
        }
        /* recurse into the smaller part, loop on the larger one */
        int left = j + 1;
        if (left < n - left) {
            quick_sort(a, left, cmp);
            a += left;
            n -= left;
        } else {
            quick_sort(a + left, n - left, cmp);
            n = left;
        }
    }
    insertion_sort(a, n, cmp);
}

/* Index of the first element in sorted a[0..n) equal to key, or -1. */
static int search(const uint32_t *a, int n, uint32_t key, cmp_fn cmp)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = cmp(a[mid], key);
        if (c == 0) {
            while (mid > 0 && cmp(a[mid - 1], key) == 0)
                mid--;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int main(int argc, char **argv)
{
    int n = (int)arg_u32(argc, argv, 0, 20000);
    uint32_t rounds = arg_u32(argc, argv, 1, 12);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 1));
    static const cmp_fn cmps[3] = { cmp_up, cmp_down, cmp_low };
    static const char *const names[3] = { "up", "down", "low" };
    uint32_t counts[3] = { 0, 0, 0 };
    int failed = 0;
    sum_t sum;
    sum_init(&sum);

    if (n < 1)
        n = 1;
    uint32_t *a = malloc((size_t)n * sizeof *a);
    if (a == 0) {
        printf("sort: out of memory\n");
        return 99;
    }
    for (uint32_t r = 0; r < rounds; r++) {
        cmp_fn cmp = cmps[r % 3];
        /* a narrow key range on some rounds gives many duplicates */
        uint32_t range = (r & 1) ? 1000u : 0xffffffffu;
        for (int i = 0; i < n; i++)
            a[i] = rng_next(&rng) % range;
        uint32_t probe = a[rng_below(&rng, (uint32_t)n)];
        quick_sort(a, n, cmp);
        for (int i = 1; i < n; i++) {
            if (cmp(a[i - 1], a[i]) > 0) {
                failed = 1;
                break;
            }
        }
        int found = search(a, n, probe, cmp);
        if (found < 0)
            failed = 2;
        int missing = 0;
        for (int k = 0; k < 64; k++) {
            if (search(a, n, rng_next(&rng), cmp) < 0)
                missing++;
        }
        counts[r % 3]++;
        sum_add(&sum, a[0]);
        sum_add(&sum, a[n / 2]);
        sum_add(&sum, a[n - 1]);
        sum_add(&sum, (uint32_t)found);
        sum_add(&sum, (uint32_t)missing);
    }
    free(a);
    for (int k = 0; k < 3; k++)
        printf("sort: %u rounds by %s\n", (unsigned)counts[k], names[k]);
    printf("sort: n=%d\n", n);
    return finish("sort", sum.h, failed);
}
