/*
 * dijkstra: single-source shortest paths on a random sparse directed graph
 * stored as adjacency arrays (one malloc per vertex), with a binary-heap priority queue
 * (lazy deletion); every result is certified (no edge can be relaxed, every
 * vertex has a tight incoming edge). Graphs are rebuilt (freed and
 * allocated again) per round.
 *
 * Exercises: malloc/realloc/free, data-dependent branches (heap sift,
 * relaxation), loops with input-dependent trip counts, early break out of
 * the heap's sift loops and early return from the certificate check.
 *
 * Arguments: [vertices = 2000] [edges per vertex = 5] [rounds = 2] [seed = 13]
 */
#include "common.h"

#define INF 0xffffffffu

typedef struct {
    uint32_t to, w;
} edge_t;

typedef struct {
    edge_t *e;
    uint32_t n, cap;
} adj_t;

typedef struct {
    uint32_t d, v;
} item_t;

typedef struct {
    item_t *a;
    uint32_t n, cap;
} heap_t;

static int heap_push(heap_t *h, uint32_t d, uint32_t v)
{
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 64;
        item_t *a = realloc(h->a, cap * sizeof *a);
        if (a == 0)
            return 0;
        h->a = a;
        h->cap = cap;
    }
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p].d <= d)
            break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i].d = d;
    h->a[i].v = v;
    return 1;
}

static item_t heap_pop(heap_t *h)
{
    item_t top = h->a[0];
    item_t last = h->a[--h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1].d < h->a[c].d)
            c++;
        if (last.d <= h->a[c].d)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = last;
    return top;
}

static void add_edge(adj_t *g, uint32_t from, uint32_t to, uint32_t w)
{
    adj_t *a = &g[from];
    a->e[a->n].to = to;
    a->e[a->n].w = w;
    a->n++;
}

static int dijkstra(const adj_t *g, uint32_t nv, uint32_t src, uint32_t *dist, heap_t *h)
{
    for (uint32_t i = 0; i < nv; i++)
        dist[i] = INF;
    dist[src] = 0;
    h->n = 0;
    if (!heap_push(h, 0, src))
        return 0;
    while (h->n > 0) {
        item_t it = heap_pop(h);
        if (it.d != dist[it.v])
            continue; /* stale entry */
        const adj_t *a = &g[it.v];
        for (uint32_t k = 0; k < a->n; k++) {
            uint32_t nd = it.d + a->e[k].w;
            uint32_t to = a->e[k].to;
            if (nd < dist[to]) {
                dist[to] = nd;
                if (!heap_push(h, nd, to))
                    return 0;
            }
        }
    }
    return 1;
}

/*
 * Check that dist is the shortest-path distance from src: no edge can still
 * be relaxed, and every reached vertex other than src has a tight incoming
 * edge (dist[u] + w == dist[v]). Returns 0 when both hold.
 */
static int certify(const adj_t *g, uint32_t nv, uint32_t src, const uint32_t *dist, uint8_t *tight)
{
    for (uint32_t i = 0; i < nv; i++)
        tight[i] = i == src;
    if (dist[src] != 0)
        return 1;
    for (uint32_t u = 0; u < nv; u++) {
        if (dist[u] == INF)
            continue;
        for (uint32_t k = 0; k < g[u].n; k++) {
            uint32_t nd = dist[u] + g[u].e[k].w;
            uint32_t to = g[u].e[k].to;
            if (nd < dist[to])
                return 2;
            if (nd == dist[to])
                tight[to] = 1;
        }
    }
    for (uint32_t i = 0; i < nv; i++)
        if (!tight[i] && dist[i] != INF)
            return 3;
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t nv = arg_u32(argc, argv, 0, 2000);
    uint32_t degree = arg_u32(argc, argv, 1, 5);
    uint32_t rounds = arg_u32(argc, argv, 2, 2);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 3, 13));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    heap_t heap = { 0, 0, 0 };

    if (nv < 2)
        nv = 2;
    uint32_t *dist = malloc(nv * sizeof *dist);
    uint8_t *tight = malloc(nv);
    if (dist == 0 || tight == 0)
        goto oom;
    for (uint32_t r = 0; r < rounds; r++) {
        adj_t *g = calloc(nv, sizeof *g);
        if (g == 0)
            goto oom;
        /* a ring keeps everything reachable; random edges make shortcuts */
        for (uint32_t v = 0; v < nv; v++) {
            uint32_t extra = rng_below(&rng, 2 * degree + 1);
            g[v].cap = extra + 1;
            g[v].e = malloc(g[v].cap * sizeof *g[v].e);
            if (g[v].e == 0)
                goto oom;
            add_edge(g, v, (v + 1) % nv, 50 + rng_below(&rng, 50));
            for (uint32_t k = 0; k < extra; k++)
                add_edge(g, v, rng_below(&rng, nv), 1 + rng_below(&rng, 1000));
        }
        uint32_t far = 0, total = 0;
        for (uint32_t s = 0; s < 8; s++) {
            uint32_t src = rng_below(&rng, nv);
            if (!dijkstra(g, nv, src, dist, &heap))
                goto oom;
            if (certify(g, nv, src, dist, tight) != 0)
                failed = 1;
            for (uint32_t i = 0; i < nv; i++) {
                if (dist[i] == INF)
                    failed = 2;
                total += dist[i];
                if (dist[i] > far)
                    far = dist[i];
            }
        }
        printf("dijkstra: round %u: total distance %u, farthest %u\n", (unsigned)r,
               (unsigned)total, (unsigned)far);
        sum_add(&sum, total);
        sum_add(&sum, far);
        for (uint32_t v = 0; v < nv; v++)
            free(g[v].e);
        free(g);
    }
    free(heap.a);
    free(tight);
    free(dist);
    return finish("dijkstra", sum.h, failed);
oom:
    printf("dijkstra: out of memory\n");
    return 99;
}
