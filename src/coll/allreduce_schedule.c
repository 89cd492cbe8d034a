/* Allreduce schedules: binomial tree, pairwise exchange, adapted n-way
 * dissemination and Bruck's global combine (End, Yahyapour, Simmendinger, Alrutz:
 * "Butterfly-like Algorithms for GASPI Split Phase Allreduce", section III). */
#include "coll/schedule.h"

#include "common/fatal.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- building */

static void add_op(cr_red_schedule *p, cr_red_opcode code, int dst, int a, int b, int peer)
{
    cr_xgrow((void **)&p->ops, &p->cap_ops, p->nops + 1, sizeof *p->ops);
    p->ops[p->nops++] = (cr_red_op){.code = (uint8_t)code, .dst = (int16_t)dst,
                                     .a = (int16_t)a, .b = (int16_t)b, .peer = peer};
}

static void send_op(cr_red_schedule *p, int slot, int peer) { add_op(p, CR_RED_SEND, -1, slot, -1, peer); }
static void recv_op(cr_red_schedule *p, int slot, int peer) { add_op(p, CR_RED_RECV, slot, -1, -1, peer); }
static void copy_op(cr_red_schedule *p, int dst, int src) { add_op(p, CR_RED_COPY, dst, src, -1, -1); }
static void combine_op(cr_red_schedule *p, int dst, int a, int b) { add_op(p, CR_RED_COMBINE, dst, a, b, -1); }

/* Close the current round (empty rounds are dropped) and start the next. */
static void end_round(cr_red_schedule *p)
{
    if (p->nops == p->round_start[p->nrounds])
        return;
    cr_xgrow((void **)&p->round_start, &p->cap_rounds, p->nrounds + 2, sizeof(int));
    p->round_start[++p->nrounds] = p->nops;
}

static void schedule_init(cr_red_schedule *p, int nslots)
{
    memset(p, 0, sizeof *p);
    p->nslots = nslots;
    cr_xgrow((void **)&p->round_start, &p->cap_rounds, 2, sizeof(int));
    p->round_start[0] = 0;
}

void cr_red_schedule_free(cr_red_schedule *p)
{
    free(p->round_start);
    free(p->ops);
    memset(p, 0, sizeof *p);
}

enum { IN = 0, ACC = 1, TMP = 2 };

/* ---------------------------------------------------------------- binomial tree */

/* Reduce to rank 0 over a binomial tree, then broadcast back down the same tree.
 * Every combine puts the lower ranks' part first, so the result is the same
 * sequence of operations whatever the rank. A rank works on its input where it lies
 * (slot IN, never written) until a combination or the result lands in ACC. */
static void schedule_tree(cr_red_schedule *p, int size, int rank)
{
    schedule_init(p, 3);
    int top = 1, cur = IN;
    while (top < size)
        top <<= 1;
    for (int mask = 1; mask < top; mask <<= 1) {
        if ((rank & (2 * mask - 1)) == mask) {
            send_op(p, cur, rank - mask);
            end_round(p);
        } else if ((rank & (2 * mask - 1)) == 0 && rank + mask < size) {
            recv_op(p, TMP, rank + mask);
            combine_op(p, ACC, cur, TMP);
            end_round(p);
            cur = ACC;
        }
    }
    for (int mask = top >> 1; mask >= 1; mask >>= 1) {
        if ((rank & (2 * mask - 1)) == mask) {
            recv_op(p, ACC, rank - mask);
            end_round(p);
            cur = ACC;
        } else if ((rank & (2 * mask - 1)) == 0 && rank + mask < size) {
            send_op(p, cur, rank + mask);
            end_round(p);
        }
    }
    p->result = cur;
}

/* ---------------------------------------------------------------- pairwise exchange */

/* Butterfly among the largest power of two p2 <= size; the q = size - p2 leftover
 * ranks first hand their input to rank - p2 and get the result back at the end
 * (paper III.A, "pairwise exchange"). Both partners of an exchange combine the lower
 * rank's value first, so they compute the same value. A rank works on its input
 * itself (slot IN, never written) until its first combination lands in ACC: no
 * copy of the input. */
static void schedule_pairwise(cr_red_schedule *p, int size, int rank)
{
    schedule_init(p, 3);
    int p2 = 1;
    while (2 * p2 <= size)
        p2 *= 2;
    int q = size - p2, cur = IN;
    if (rank >= p2) {
        send_op(p, IN, rank - p2);
        end_round(p);
        recv_op(p, ACC, rank - p2);
        end_round(p);
        p->result = ACC;
        return;
    }
    if (rank < q) {
        recv_op(p, TMP, rank + p2);
        combine_op(p, ACC, IN, TMP);
        end_round(p);
        cur = ACC;
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        int partner = rank ^ mask;
        send_op(p, cur, partner);
        recv_op(p, TMP, partner);
        if (rank < partner)
            combine_op(p, ACC, cur, TMP);
        else
            combine_op(p, ACC, TMP, cur);
        end_round(p);
        cur = ACC;
    }
    if (rank < q) {
        send_op(p, ACC, rank + p2);
        end_round(p);
    }
    p->result = cur;
}

/* ---------------------------------------------------------------- adapted dissemination */

/* Lengths of the partial results every rank builds on its way: its input (1), and
 * after j blocks of round l the newest (j+1)(n+1)^(l-1) inputs. Bounded by `limit`. */
static bool is_partial_length(int len, int n, int limit)
{
    if (len == 1)
        return true;
    for (long unit = 1; unit < limit; unit *= n + 1)
        if (len % unit == 0 && len / unit >= 2 && len / unit <= n + 1 && len <= limit)
            return true;
    return false;
}

bool cr_dissem_adaption_for(int p, int n, cr_dissem_adaption *out)
{
    if (p < 1 || n < 1)
        return false;
    cr_dissem_adaption a = {0};
    long m = 1;
    while (m * (n + 1) < p) {
        m *= n + 1;
        a.rounds++;
    }
    a.rounds++; /* the last round; p == 1 needs none */
    if (p == 1) {
        *out = (cr_dissem_adaption){0};
        return true;
    }
    a.block = (int)m;
    a.full = (int)(p / m) - 1;
    a.rest = (int)(p - (a.full + 1) * m);
    if (a.rest == 0) {
        *out = a;
        return true;
    }
    /* send_len - drop_len == rest, both lengths of partial results (drop may be 0);
     * the smallest drop costs the least recomputation. */
    for (int drop = 0; drop < m; drop++) {
        if (drop && !is_partial_length(drop, n, (int)m))
            continue;
        int send = a.rest + drop;
        if (send <= m && is_partial_length(send, n, (int)m)) {
            a.send_len = send;
            a.drop_len = drop;
            *out = a;
            return true;
        }
    }
    return false;
}

int cr_dissem_smallest_n(int p, int max_n)
{
    cr_dissem_adaption a;
    for (int n = 1; n <= max_n; n++)
        if (cr_dissem_adaption_for(p, n, &a))
            return n;
    return 0;
}

/* Slots: IN, ACC, TMP (unused), then RB(l, j) for the block received from the j-th
 * peer in round l (1-based), then SAVE (the partial result this rank sends in the
 * last round) and REST (its own inputs minus the newest drop_len). */
#define RB(l, j, n) (3 + ((l) - 1) * (n) + ((j) - 1))

/* Combine into dst every block received in rounds 1..k-1 that holds inputs older
 * than the newest `drop` ones, oldest last. Used for the receiver's side of the
 * adaption: the newest `drop` inputs are its input and the first blocks received. */
static void combine_without_newest(cr_red_schedule *p, int dst, int drop, int n, int k)
{
    long covered = 1; /* the input */
    bool started = false;
    for (int l = 1; l < k; l++)
        for (int j = 1; j <= n; j++) {
            long unit = 1;
            for (int i = 1; i < l; i++)
                unit *= n + 1;
            covered += unit;
            if (covered - unit < drop)
                continue; /* this block is among the dropped newest inputs */
            if (!started)
                copy_op(p, dst, RB(l, j, n));
            else
                combine_op(p, dst, dst, RB(l, j, n));
            started = true;
        }
}

static bool schedule_dissem(cr_red_schedule *p, int size, int rank, int n)
{
    cr_dissem_adaption a;
    if (!cr_dissem_adaption_for(size, n, &a))
        return false;
    int k = a.rounds;
    int save = 3 + k * n, rest = save + 1;
    schedule_init(p, rest + 1);
    p->result = ACC;
    copy_op(p, ACC, IN);
    end_round(p);
    if (size == 1)
        return true;
    if (a.send_len == 1)
        copy_op(p, save, IN);

    long unit = 1; /* (n+1)^(l-1) */
    for (int l = 1; l < k; l++, unit *= n + 1) {
        for (int j = 1; j <= n; j++) {
            send_op(p, ACC, cr_schedule_mod(rank + j * unit, size));
            recv_op(p, RB(l, j, n), cr_schedule_mod(rank - j * unit, size));
        }
        for (int j = 1; j <= n; j++) {
            combine_op(p, ACC, ACC, RB(l, j, n));
            if ((j + 1) * unit == a.send_len)
                copy_op(p, save, ACC);
        }
        end_round(p);
    }

    /* Last round: `full` whole blocks, and the partial one if rest > 0. */
    long m = a.block;
    for (int j = 1; j <= a.full; j++) {
        send_op(p, ACC, cr_schedule_mod(rank + j * m, size));
        recv_op(p, RB(k, j, n), cr_schedule_mod(rank - j * m, size));
    }
    if (a.rest) {
        send_op(p, save, cr_schedule_mod(rank + (a.full + 1) * m, size));
        recv_op(p, RB(k, a.full + 1, n), cr_schedule_mod(rank - (a.full + 1) * m, size));
    }
    int base = ACC;
    if (a.drop_len) {
        combine_without_newest(p, rest, a.drop_len, n, k);
        base = rest;
    }
    int blocks = a.full + (a.rest ? 1 : 0);
    for (int j = 1; j <= blocks; j++) {
        combine_op(p, ACC, j == 1 ? base : ACC, RB(k, j, n));
    }
    end_round(p);
    return true;
}

/* ---------------------------------------------------------------- Bruck */

/* Bruck and Ho's n-port global combine (paper III.C). Each rank keeps S1, the
 * combination of its own input and the next c inputs (p, p+1, ..., p+c), and S0, the
 * same without its own input. In the round for the base-(n+1) digit alpha of
 * size - 1 (most significant first) it receives S1 from alpha peers at distances
 * j(c+1) and S0 from the n - alpha peers after them, so that c grows to
 * (n+1)c + alpha; after the last digit c == size - 1. */
static void schedule_bruck(cr_red_schedule *p, int size, int rank, int n)
{
    int digits[64], k = 0;
    for (int v = size - 1; v > 0; v /= n + 1)
        digits[k++] = v % (n + 1);
    enum { S0 = 1, S1 = 2 };
    int rb = 3; /* RB slots: n per round */
    schedule_init(p, rb + k * n);
    p->result = S1;
    copy_op(p, S1, IN);
    end_round(p);
    long c = 0;
    for (int l = 0; l < k; l++) {
        int alpha = digits[k - 1 - l];
        int got = 0;
        for (int j = 1; j <= alpha; j++) {
            send_op(p, S1, cr_schedule_mod(rank - j * (c + 1), size));
            recv_op(p, rb + l * n + got++, cr_schedule_mod(rank + j * (c + 1), size));
        }
        if (c > 0)
            for (int j = 1; j <= n - alpha; j++) {
                send_op(p, S0, cr_schedule_mod(rank - alpha * (c + 1) - j * c, size));
                recv_op(p, rb + l * n + got++, cr_schedule_mod(rank + alpha * (c + 1) + j * c, size));
            }
        bool last = l == k - 1;
        for (int g = 0; g < got; g++) {
            int r = rb + l * n + g;
            combine_op(p, S1, S1, r);
            if (last)
                continue;
            if (c == 0 && g == 0)
                copy_op(p, S0, r); /* S0 starts empty */
            else
                combine_op(p, S0, S0, r);
        }
        end_round(p);
        c = (n + 1) * c + alpha;
    }
}

/* True when no op of the schedule writes slot 0, the input. */
static bool input_kept(const cr_red_schedule *schedule)
{
    for (int i = 0; i < schedule->nops; i++)
        if (schedule->ops[i].code != CR_RED_SEND && schedule->ops[i].dst == 0)
            return false;
    return true;
}

/* Binomial broadcast of slot 0 from rank 0: in the round for distance d, the ranks
 * below d send to the rank d above them. */
void cr_schedule_bcast(cr_red_schedule *p, int size, int rank)
{
    schedule_init(p, 1);
    p->result = IN;
    for (long d = 1; d < size; d <<= 1) {
        if (rank < d && rank + d < size)
            send_op(p, IN, (int)(rank + d));
        else if (rank >= d && rank < 2 * d)
            recv_op(p, IN, (int)(rank - d));
        end_round(p);
    }
    p->keeps_input = input_kept(p); /* only where this rank sends and never receives */
}

static bool build_allreduce(cr_red_schedule *schedule, cr_allreduce_algo algo, int p, int rank, int n)
{
    switch (algo) {
    case CR_SCHEDULE_AR_TREE: schedule_tree(schedule, p, rank); return true;
    case CR_SCHEDULE_AR_PAIRWISE: schedule_pairwise(schedule, p, rank); return true;
    case CR_SCHEDULE_AR_DISSEM: return n >= 1 && schedule_dissem(schedule, p, rank, n);
    case CR_SCHEDULE_AR_BRUCK:
        if (n < 1)
            return false;
        schedule_bruck(schedule, p, rank, n);
        return true;
    }
    return false;
}

bool cr_schedule_allreduce(cr_red_schedule *schedule, cr_allreduce_algo algo, int p, int rank, int n)
{
    if (p < 1 || rank < 0 || rank >= p || !build_allreduce(schedule, algo, p, rank, n))
        return false;
    schedule->keeps_input = input_kept(schedule);
    return true;
}
