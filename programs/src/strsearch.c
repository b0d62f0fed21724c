/*
 * strsearch: builds a text of generated words, splits it into tokens with a
 * hand-written tokeniser, and searches it for patterns three ways (naive,
 * Boyer-Moore-Horspool and the C library's strstr); all three must agree.
 *
 * Exercises: string and memory routines (strlen, strstr, memcmp, memchr,
 * memmove, strncpy), early break/return out of search loops, data-dependent
 * branches, if-else chains over character classes.
 *
 * Arguments: [text length = 24000] [patterns = 40] [seed = 5]
 */
#include <string.h>
#include "common.h"

static const char *const words[] = {
    "alpha", "branch", "cycle", "delta", "echo", "fetch", "gate", "hart", "issue",
    "jump", "kernel", "latch", "mux", "nop", "opcode", "pipe", "queue", "retire",
    "stall", "trap", "uop", "vector", "write", "xlen", "yield", "zero",
};
#define NWORDS (sizeof words / sizeof words[0])

/* Positions of all matches of pat in text: naive, byte by byte. */
static uint32_t count_naive(const char *text, size_t n, const char *pat, size_t m, uint32_t *first)
{
    uint32_t count = 0;
    *first = 0xffffffffu;
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && text[i + j] == pat[j])
            j++;
        if (j == m) {
            if (count == 0)
                *first = (uint32_t)i;
            count++;
        }
    }
    return count;
}

static uint32_t count_horspool(const char *text, size_t n, const char *pat, size_t m)
{
    size_t shift[256];
    uint32_t count = 0;
    if (m == 0 || m > n)
        return 0;
    for (int c = 0; c < 256; c++)
        shift[c] = m;
    for (size_t i = 0; i + 1 < m; i++)
        shift[(uint8_t)pat[i]] = m - 1 - i;
    size_t i = 0;
    while (i + m <= n) {
        uint8_t last = (uint8_t)text[i + m - 1];
        if (last == (uint8_t)pat[m - 1] && memcmp(text + i, pat, m - 1) == 0)
            count++;
        i += shift[last];
    }
    return count;
}

static uint32_t count_strstr(const char *text, const char *pat)
{
    uint32_t count = 0;
    const char *p = text;
    while ((p = strstr(p, pat)) != 0) {
        count++;
        p++;
    }
    return count;
}

enum cls { SPACE, LETTER, DIGIT, PUNCT };

static enum cls classify(char c)
{
    if (c == ' ' || c == '\n' || c == '\t')
        return SPACE;
    else if (c >= 'a' && c <= 'z')
        return LETTER;
    else if (c >= 'A' && c <= 'Z')
        return LETTER;
    else if (c >= '0' && c <= '9')
        return DIGIT;
    else
        return PUNCT;
}

/* Count tokens of each kind; a token is a maximal run of one class. */
static void tokenise(const char *s, uint32_t counts[4], uint32_t *longest)
{
    *longest = 0;
    while (*s) {
        enum cls k = classify(*s);
        const char *start = s;
        while (*s && classify(*s) == k)
            s++;
        counts[k]++;
        if (k == LETTER && (uint32_t)(s - start) > *longest)
            *longest = (uint32_t)(s - start);
    }
}

int main(int argc, char **argv)
{
    uint32_t len = arg_u32(argc, argv, 0, 24000);
    uint32_t npat = arg_u32(argc, argv, 1, 40);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 5));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;

    char *text = malloc(len + 64);
    if (text == 0) {
        printf("strsearch: out of memory\n");
        return 99;
    }
    size_t n = 0;
    while (n < len) {
        uint32_t r = rng_next(&rng);
        const char *w = words[r % NWORDS];
        size_t wl = strlen(w);
        memcpy(text + n, w, wl);
        n += wl;
        if ((r >> 8) % 11 == 0) {
            text[n++] = (char)('0' + (r >> 12) % 10);
        }
        if ((r >> 16) % 13 == 0)
            text[n++] = ',';
        text[n++] = (r >> 20) % 17 == 0 ? '\n' : ' ';
    }
    text[n] = 0;

    uint32_t counts[4] = { 0, 0, 0, 0 };
    uint32_t longest;
    tokenise(text, counts, &longest);
    printf("strsearch: %u bytes: %u words %u numbers %u punctuation, longest word %u\n",
           (unsigned)n, (unsigned)counts[LETTER], (unsigned)counts[DIGIT],
           (unsigned)counts[PUNCT], (unsigned)longest);
    for (int k = 0; k < 4; k++)
        sum_add(&sum, counts[k]);

    char pat[32];
    uint32_t total = 0;
    for (uint32_t p = 0; p < npat; p++) {
        /* a pattern: a word, a piece of two adjacent words, or a random string */
        uint32_t r = rng_next(&rng);
        size_t m;
        if (r % 3 == 0) {
            strncpy(pat, words[(r >> 4) % NWORDS], sizeof pat - 1);
            pat[sizeof pat - 1] = 0;
            m = strlen(pat);
        } else if (r % 3 == 1) {
            size_t at = (r >> 4) % (n - 16);
            m = 3 + (r >> 24) % 10;
            memmove(pat, text + at, m);
            pat[m] = 0;
        } else {
            m = 2 + (r >> 24) % 3;
            for (size_t i = 0; i < m; i++)
                pat[i] = (char)('a' + rng_below(&rng, 26));
            pat[m] = 0;
        }
        uint32_t first;
        uint32_t a = count_naive(text, n, pat, m, &first);
        uint32_t b = count_horspool(text, n, pat, m);
        uint32_t c = count_strstr(text, pat);
        if (a != b || a != c)
            failed = 1;
        /* memchr agrees on where a pattern's first character first occurs */
        const char *fc = memchr(text, pat[0], n);
        if (a > 0 && (fc == 0 || (uint32_t)(fc - text) > first))
            failed = 2;
        total += a;
        sum_add(&sum, a);
        sum_add(&sum, first);
    }
    printf("strsearch: %u patterns, %u matches\n", (unsigned)npat, (unsigned)total);
    free(text);
    return finish("strsearch", sum.h, failed);
}
