/*
 * exprparse: generates random arithmetic expressions as text, then lexes
 * them with a table-free state machine and evaluates them with a
 * recursive-descent parser (precedence climbing for + - * / % & | ^ << >>,
 * unary minus, parentheses, decimal and hex literals). Each expression is
 * generated together with its value, which the parser must reproduce.
 *
 * Exercises: a state machine (the lexer, a switch over states), recursion,
 * if-else chains, integer multiply/divide/remainder with the zero and
 * overflow cases guarded, early return on errors.
 *
 * Arguments: [expressions = 1500] [max depth = 6] [seed = 9]
 */
#include <string.h>
#include "common.h"

/* ---- generator: writes text and returns the value it denotes ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    rng_t *rng;
} gen_t;

static void put(gen_t *g, const char *s)
{
    while (*s && g->len + 1 < g->cap)
        g->buf[g->len++] = *s++;
    g->buf[g->len] = 0;
}

static void put_num(gen_t *g, uint32_t v, int hex)
{
    char tmp[16];
    int n = 0;
    uint32_t base = hex ? 16u : 10u;
    do {
        uint32_t d = v % base;
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    if (hex)
        put(g, "0x");
    char out[18];
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = 0;
    put(g, out);
}

static uint32_t apply(char op, uint32_t a, uint32_t b)
{
    switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case '/': return b ? (uint32_t)((int32_t)a == INT32_MIN && (int32_t)b == -1 ? a : (uint32_t)((int32_t)a / (int32_t)b)) : 0;
    case '%': return b ? (uint32_t)((int32_t)a == INT32_MIN && (int32_t)b == -1 ? 0 : (uint32_t)((int32_t)a % (int32_t)b)) : 0;
    case '&': return a & b;
    case '|': return a | b;
    case '^': return a ^ b;
    case '<': return a << (b & 31u);
    case '>': return (uint32_t)((int32_t)a >> (b & 31u));
    default: return 0;
    }
}

static uint32_t gen(gen_t *g, int depth)
{
    uint32_t r = rng_next(g->rng);
    if (depth == 0 || r % 4 == 0) {
        uint32_t v = (r >> 8) % ((r & 16u) ? 100000u : 10u);
        put_num(g, v, (r & 32u) != 0);
        return v;
    }
    if (r % 7 == 1) {
        put(g, "-(");
        uint32_t v = gen(g, depth - 1);
        put(g, ")");
        return 0u - v;
    }
    static const char ops[] = "+-*/%&|^<>";
    char op = ops[(r >> 4) % 10];
    put(g, "(");
    uint32_t a = gen(g, depth - 1);
    char text[4] = { ' ', op, ' ', 0 };
    if (op == '<' || op == '>') {
        char two[5] = { ' ', op, op, ' ', 0 };
        put(g, two);
    } else {
        put(g, text);
    }
    uint32_t b = gen(g, depth - 1);
    put(g, ")");
    return apply(op, a, b);
}

/* ---- lexer: a state machine over characters ---- */

enum tok { T_END, T_NUM, T_OP, T_LPAREN, T_RPAREN, T_ERROR };

typedef struct {
    const char *s;
    enum tok kind;
    uint32_t num;
    char op;
} lexer_t;

enum lstate { L_START, L_ZERO, L_DEC, L_HEX_START, L_HEX, L_SHIFT, L_DONE };

static void next(lexer_t *lx)
{
    enum lstate st = L_START;
    uint32_t v = 0;
    char first = 0;
    for (;;) {
        char c = *lx->s;
        switch (st) {
        case L_START:
            if (c == ' ') {
                lx->s++;
            } else if (c == 0) {
                lx->kind = T_END;
                return;
            } else if (c == '0') {
                lx->s++;
                st = L_ZERO;
            } else if (c >= '1' && c <= '9') {
                v = (uint32_t)(c - '0');
                lx->s++;
                st = L_DEC;
            } else if (c == '(' || c == ')') {
                lx->kind = c == '(' ? T_LPAREN : T_RPAREN;
                lx->s++;
                return;
            } else if (c == '<' || c == '>') {
                first = c;
                lx->s++;
                st = L_SHIFT;
            } else if (strchr("+-*/%&|^", c) != 0) {
                lx->kind = T_OP;
                lx->op = c;
                lx->s++;
                return;
            } else {
                lx->kind = T_ERROR;
                return;
            }
            break;
        case L_ZERO:
            if (c == 'x') {
                lx->s++;
                st = L_HEX_START;
            } else {
                st = L_DEC;
            }
            break;
        case L_DEC:
            if (c >= '0' && c <= '9') {
                v = v * 10u + (uint32_t)(c - '0');
                lx->s++;
            } else {
                st = L_DONE;
            }
            break;
        case L_HEX_START:
        case L_HEX:
            if (c >= '0' && c <= '9') {
                v = v * 16u + (uint32_t)(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                v = v * 16u + (uint32_t)(c - 'a' + 10);
            } else if (st == L_HEX_START) {
                lx->kind = T_ERROR;
                return;
            } else {
                st = L_DONE;
                break;
            }
            lx->s++;
            st = L_HEX;
            break;
        case L_SHIFT:
            if (c != first) {
                lx->kind = T_ERROR;
                return;
            }
            lx->s++;
            lx->kind = T_OP;
            lx->op = first;
            return;
        case L_DONE:
            lx->kind = T_NUM;
            lx->num = v;
            return;
        }
    }
}

/* ---- parser: precedence climbing ---- */

static int prec(char op)
{
    switch (op) {
    case '|': return 1;
    case '^': return 2;
    case '&': return 3;
    case '<': case '>': return 4;
    case '+': case '-': return 5;
    case '*': case '/': case '%': return 6;
    default: return 0;
    }
}

static int parse_expr(lexer_t *lx, int min_prec, uint32_t *out);

static int parse_primary(lexer_t *lx, uint32_t *out)
{
    if (lx->kind == T_NUM) {
        *out = lx->num;
        next(lx);
        return 1;
    }
    if (lx->kind == T_OP && lx->op == '-') {
        next(lx);
        uint32_t v;
        if (!parse_primary(lx, &v))
            return 0;
        *out = 0u - v;
        return 1;
    }
    if (lx->kind == T_LPAREN) {
        next(lx);
        if (!parse_expr(lx, 1, out))
            return 0;
        if (lx->kind != T_RPAREN)
            return 0;
        next(lx);
        return 1;
    }
    return 0;
}

static int parse_expr(lexer_t *lx, int min_prec, uint32_t *out)
{
    uint32_t lhs;
    if (!parse_primary(lx, &lhs))
        return 0;
    while (lx->kind == T_OP && prec(lx->op) >= min_prec) {
        char op = lx->op;
        int p = prec(op);
        next(lx);
        uint32_t rhs;
        if (!parse_expr(lx, p + 1, &rhs))
            return 0;
        lhs = apply(op, lhs, rhs);
    }
    *out = lhs;
    return 1;
}

static int evaluate(const char *s, uint32_t *out)
{
    lexer_t lx = { .s = s };
    next(&lx);
    if (!parse_expr(&lx, 1, out))
        return 0;
    return lx.kind == T_END;
}

int main(int argc, char **argv)
{
    uint32_t count = arg_u32(argc, argv, 0, 1500);
    int depth = (int)arg_u32(argc, argv, 1, 6);
    rng_t rng;
    rng_seed(&rng, arg_u32(argc, argv, 2, 9));
    sum_t sum;
    sum_init(&sum);
    int failed = 0;
    static char buf[8192];
    gen_t g = { .buf = buf, .cap = sizeof buf, .rng = &rng };
    uint32_t bytes = 0, bad = 0;

    if (depth > 10)
        depth = 10;
    /* a fixed expression with a known value */
    uint32_t v;
    if (!evaluate("(1 + 2 * 3 - 0x10) << 2 ^ -(7 % 4) | 100 / 7", &v) || v != 47u)
        failed = 1;
    printf("exprparse: sample = %d\n", (int)v);
    sum_add(&sum, v);
    for (uint32_t i = 0; i < count; i++) {
        g.len = 0;
        uint32_t want = gen(&g, depth);
        uint32_t got;
        if (!evaluate(buf, &got) || got != want) {
            bad++;
            failed = 2;
        }
        bytes += (uint32_t)g.len;
        sum_add(&sum, got);
        if (i == 0)
            printf("exprparse: first: %s = %d\n", buf, (int)got);
    }
    /* malformed input must be rejected */
    static const char *const broken[] = { "(1 + 2", "1 +", "0x", "3 < 4", "1 $ 2", ")" };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++)
        if (evaluate(broken[i], &v))
            failed = 3;
    printf("exprparse: %u expressions, %u bytes, %u wrong\n", (unsigned)count, (unsigned)bytes,
           (unsigned)bad);
    return finish("exprparse", sum.h, failed);
}
