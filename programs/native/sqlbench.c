/*
 * sqlbench.c: a small, realistic SQLite workload for measuring
 * profile-guided builds of a large third-party code base (docs/LBR.md,
 * "SQLite and PGO against clang's instrumented PGO").
 *
 * Native x86-64 only; compiled together with the SQLite amalgamation
 * (sqlite3.c), which this repository does not ship: tests/lbr_sqlite.rs and
 * scripts/pgo-compare.sh take it from the libsqlite3-sys crate's source.
 *
 *   sqlbench SIZE [SEED]
 *
 * An in-memory database (no file system in the measurement): two tables
 * with secondary indexes, filled by prepared INSERTs inside transactions;
 * point and range queries through the indexes; a join with GROUP BY and
 * ORDER BY; aggregates with HAVING; LIKE and string functions; an
 * UPDATE/DELETE mix; then the same queries again. SIZE scales the number
 * of customers (SIZE) and orders (8 × SIZE); SEED changes the data, so a
 * training input and an evaluation input can differ in both.
 *
 * Every result row is hashed (FNV-1a over its text); the program prints
 * one line per phase and, last, `sqlbench: checksum xxxxxxxx`. Every build
 * of the same SQLite (any compiler, optimisation or profile) prints the
 * same bytes: a profile must change speed, never results.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite3.h"

static sqlite3 *db;
static uint32_t hash = 2166136261u;

static void die(const char *what)
{
    fprintf(stderr, "sqlbench: %s: %s\n", what, sqlite3_errmsg(db));
    exit(2);
}

static void mix(const unsigned char *s)
{
    if (s == NULL)
        s = (const unsigned char *)"NULL";
    for (; *s; s++)
        hash = (hash ^ *s) * 16777619u;
    hash = (hash ^ '|') * 16777619u;
}

/* xorshift32: the data, reproducible from the seed. */
static uint32_t rng;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void exec(const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlbench: %s: %s\n", sql, err);
        exit(2);
    }
}

static sqlite3_stmt *prepare(const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die(sql);
    return st;
}

/* Run a prepared statement to its end, hashing every column of every row;
 * returns the rows. */
static uint32_t drain(sqlite3_stmt *st)
{
    uint32_t rows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int n = sqlite3_column_count(st);
        for (int i = 0; i < n; i++)
            mix(sqlite3_column_text(st, i));
        rows++;
    }
    if (rc != SQLITE_DONE)
        die("step");
    sqlite3_reset(st);
    return rows;
}

static uint32_t query(const char *sql)
{
    sqlite3_stmt *st = prepare(sql);
    uint32_t rows = drain(st);
    sqlite3_finalize(st);
    return rows;
}

static const char *const cities[] = {
    "Aachen", "Bergen", "Cordoba", "Dundee", "Esbjerg", "Florence", "Ghent",
    "Hamburg", "Izmir", "Jena", "Kyoto", "Lyon", "Malaga", "Nantes", "Oslo",
    "Porto", "Quito", "Riga", "Sapporo", "Turku", "Utrecht", "Vigo",
};
static const char *const items[] = {
    "anvil", "bolt", "cable", "drill", "epoxy", "file", "gasket", "hinge",
    "insulator", "jack", "knob", "lever", "magnet", "nut", "oiler", "pulley",
    "quill", "rivet", "spring", "tap", "u-bolt", "valve", "washer", "yoke",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void fill(uint32_t customers, uint32_t orders)
{
    char name[32];
    sqlite3_stmt *c = prepare("INSERT INTO customer(id, name, city, balance) VALUES (?, ?, ?, ?)");
    sqlite3_stmt *o = prepare(
        "INSERT INTO orders(customer, item, qty, price, day) VALUES (?, ?, ?, ?, ?)");
    exec("BEGIN");
    for (uint32_t i = 1; i <= customers; i++) {
        snprintf(name, sizeof name, "cust%05u-%c%c", (unsigned)i, 'a' + next() % 26,
                 'a' + next() % 26);
        sqlite3_bind_int(c, 1, (int)i);
        sqlite3_bind_text(c, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(c, 3, cities[next() % COUNT(cities)], -1, SQLITE_STATIC);
        sqlite3_bind_int(c, 4, (int)(next() % 100000));
        if (sqlite3_step(c) != SQLITE_DONE)
            die("insert customer");
        sqlite3_reset(c);
    }
    /* Orders in several transactions, as an application commits batches. */
    for (uint32_t i = 0; i < orders; i++) {
        if (i % 1000 == 999) {
            exec("COMMIT");
            exec("BEGIN");
        }
        /* Skewed: a few customers place most orders. */
        uint32_t r = next() % customers;
        uint32_t who = 1 + (next() & 1 ? r : r / 16);
        sqlite3_bind_int(o, 1, (int)who);
        sqlite3_bind_text(o, 2, items[next() % COUNT(items)], -1, SQLITE_STATIC);
        sqlite3_bind_int(o, 3, (int)(1 + next() % 20));
        sqlite3_bind_double(o, 4, (double)(next() % 10000) / 100.0);
        sqlite3_bind_int(o, 5, (int)(next() % 365));
        if (sqlite3_step(o) != SQLITE_DONE)
            die("insert order");
        sqlite3_reset(o);
    }
    exec("COMMIT");
    sqlite3_finalize(c);
    sqlite3_finalize(o);
}

/* Point lookups and range scans through the indexes, as prepared statements. */
static uint32_t lookups(uint32_t customers, uint32_t n)
{
    uint32_t rows = 0;
    sqlite3_stmt *by_customer =
        prepare("SELECT id, item, qty, price FROM orders WHERE customer = ? ORDER BY day");
    sqlite3_stmt *by_day = prepare(
        "SELECT count(*), sum(qty), round(avg(price), 2) FROM orders WHERE day BETWEEN ? AND ?");
    sqlite3_stmt *by_city = prepare(
        "SELECT name, balance FROM customer WHERE city = ? AND balance > ? ORDER BY balance DESC "
        "LIMIT 5");
    for (uint32_t i = 0; i < n; i++) {
        sqlite3_bind_int(by_customer, 1, (int)(1 + next() % customers));
        rows += drain(by_customer);
        /* A range scan every 8th time, over a few days: each reads about
         * SIZE / 20 orders, which keeps the whole run about linear in SIZE. */
        if (i % 8 == 0) {
            uint32_t day = next() % 360;
            sqlite3_bind_int(by_day, 1, (int)day);
            sqlite3_bind_int(by_day, 2, (int)(day + next() % 5));
            rows += drain(by_day);
        }
        sqlite3_bind_text(by_city, 1, cities[next() % COUNT(cities)], -1, SQLITE_STATIC);
        sqlite3_bind_int(by_city, 2, (int)(next() % 90000));
        rows += drain(by_city);
    }
    sqlite3_finalize(by_customer);
    sqlite3_finalize(by_day);
    sqlite3_finalize(by_city);
    return rows;
}

/* The first column of the first row of `sql`, as an integer. */
static int scalar(const char *sql)
{
    sqlite3_stmt *st = prepare(sql);
    if (sqlite3_step(st) != SQLITE_ROW)
        die(sql);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Joins, aggregates, string functions: the planner and the VDBE at work. */
static uint32_t reports(void)
{
    uint32_t rows = 0;
    rows += query("SELECT c.city, count(*), sum(o.qty), round(sum(o.qty * o.price), 2) "
                  "FROM customer c JOIN orders o ON o.customer = c.id "
                  "GROUP BY c.city ORDER BY 4 DESC");
    rows += query("SELECT item, count(*) AS n, max(price), min(price) FROM orders "
                  "GROUP BY item HAVING n > 10 ORDER BY n DESC, item");
    rows += query("SELECT c.name, t.total FROM customer c JOIN "
                  "(SELECT customer, sum(qty * price) AS total FROM orders GROUP BY customer) t "
                  "ON t.customer = c.id ORDER BY t.total DESC, c.id LIMIT 20");
    rows += query("SELECT upper(substr(name, 1, 6)), length(name), city FROM customer "
                  "WHERE name LIKE '%-a%' OR city LIKE 'S%' ORDER BY id LIMIT 200");
    rows += query("SELECT day / 30 AS month, count(DISTINCT customer), "
                  "printf('%.2f', avg(qty)) FROM orders GROUP BY month ORDER BY month");
    rows += query("SELECT count(*) FROM customer c WHERE NOT EXISTS "
                  "(SELECT 1 FROM orders o WHERE o.customer = c.id)");
    return rows;
}

/* Updates and deletes through the indexes, in transactions. */
static void churn(uint32_t customers, uint32_t n)
{
    sqlite3_stmt *pay = prepare("UPDATE customer SET balance = balance - ? WHERE id = ?");
    sqlite3_stmt *bump = prepare("UPDATE orders SET qty = qty + 1 WHERE customer = ? AND day < ?");
    sqlite3_stmt *drop = prepare("DELETE FROM orders WHERE day = ? AND qty > ?");
    exec("BEGIN");
    for (uint32_t i = 0; i < n; i++) {
        sqlite3_bind_int(pay, 1, (int)(next() % 500));
        sqlite3_bind_int(pay, 2, (int)(1 + next() % customers));
        if (sqlite3_step(pay) != SQLITE_DONE)
            die("update customer");
        sqlite3_reset(pay);
        sqlite3_bind_int(bump, 1, (int)(1 + next() % customers));
        sqlite3_bind_int(bump, 2, (int)(next() % 365));
        if (sqlite3_step(bump) != SQLITE_DONE)
            die("update orders");
        sqlite3_reset(bump);
        if (i % 8 == 0) {
            sqlite3_bind_int(drop, 1, (int)(next() % 365));
            sqlite3_bind_int(drop, 2, (int)(10 + next() % 10));
            if (sqlite3_step(drop) != SQLITE_DONE)
                die("delete orders");
            sqlite3_reset(drop);
        }
    }
    exec("COMMIT");
    sqlite3_finalize(pay);
    sqlite3_finalize(bump);
    sqlite3_finalize(drop);
}

int main(int argc, char **argv)
{
    uint32_t size = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2000;
    rng = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1;
    if (size < 1 || rng == 0) {
        fprintf(stderr, "usage: sqlbench SIZE [SEED]   (SIZE ≥ 1, SEED ≠ 0)\n");
        return 2;
    }
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        die("open");
    exec("CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, "
         "balance REAL)");
    exec("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER NOT NULL "
         "REFERENCES customer(id), item TEXT, qty INTEGER, price REAL, day INTEGER)");
    exec("CREATE INDEX orders_customer ON orders(customer)");
    exec("CREATE INDEX orders_day ON orders(day)");
    exec("CREATE INDEX customer_city ON customer(city, balance)");

    uint32_t customers = size, orders = 8 * size;
    fill(customers, orders);
    printf("filled: %u customers, %u orders\n", (unsigned)customers, (unsigned)orders);
    uint32_t rows = lookups(customers, size);
    printf("lookups: %u rows\n", (unsigned)rows);
    printf("reports: %u rows\n", (unsigned)reports());
    churn(customers, size);
    printf("after updates: %d orders\n", scalar("SELECT count(*) FROM orders"));
    printf("reports again: %u rows\n", (unsigned)reports());
    sqlite3_close(db);
    printf("sqlbench: checksum %08x\n", (unsigned)hash);
    return 0;
}
