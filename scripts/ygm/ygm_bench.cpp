// The histogram's workload on YGM's containers, for scripts/container_compare.sh:
// each rank inserts N random 8-byte keys out of K (the same streams as
// apps/container_bench) into a counting_set, a map (async_reduce with +) and an
// array (async_reduce with +), each timed to the barrier that applies every insert
// and checked: the counts add up to N * P. Built against YGM's headers by
// scripts/ygm/build.sh; not part of Courier's build.
//
//   mpirun -np P ygm_bench KEYS INSERTS [scramble]   (suffixes K, M, G)
// With "scramble", key i is sent as a 64-bit hash of i (apps/container_bench
// --scramble draws the same keys), so that no container sees consecutive integers.
// prints "ygm <structure> <M inserts/s>" on rank 0, or exits 1 on a wrong count.
#include <ygm/comm.hpp>
#include <ygm/container/array.hpp>
#include <ygm/container/counting_set.hpp>
#include <ygm/container/map.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t bounded(uint64_t r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

// apps/container_bench's stream for `rank` under seed 1.
static uint64_t stream_seed(int rank) {
  uint64_t s = 1 * 0x100000001b3ULL + (uint64_t)rank;
  return splitmix(&s);
}

static uint64_t parse(const char *text) {
  char *end;
  uint64_t v = std::strtoull(text, &end, 10);
  switch (*end) {
    case 'K': v <<= 10; break;
    case 'M': v <<= 20; break;
    case 'G': v <<= 30; break;
    default: break;
  }
  return v;
}

static bool scramble = false;

static uint64_t key_of(uint64_t index) {
  if (!scramble) return index;
  uint64_t s = index;
  return splitmix(&s);
}

template <typename Insert, typename Total>
static bool run(ygm::comm &world, const char *name, uint64_t keys, uint64_t n,
                Insert insert, Total total) {
  world.barrier();
  double t0 = MPI_Wtime();
  uint64_t s = stream_seed(world.rank());
  for (uint64_t i = 0; i < n; i++) insert(key_of(bounded(splitmix(&s), keys)));
  world.barrier();
  double t = MPI_Wtime() - t0, slowest;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  uint64_t mine = total(), all;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  bool ok = all == n * (uint64_t)world.size();
  if (world.rank0())
    std::printf("ygm %s %.2f%s\n", name, (double)n * world.size() / slowest / 1e6,
                ok ? "" : " WRONG");
  return ok;
}

int main(int argc, char **argv) {
  ygm::comm world(&argc, &argv);
  if (argc < 3 || argc > 4 || (argc == 4 && std::string(argv[3]) != "scramble")) {
    if (world.rank0()) std::fprintf(stderr, "usage: ygm_bench KEYS INSERTS [scramble]\n");
    return 2;
  }
  scramble = argc == 4;
  uint64_t keys = parse(argv[1]), n = parse(argv[2]);
  bool ok = true;
  {
    ygm::container::counting_set<uint64_t> cs(world);
    ok &= run(world, "counting-set", keys, n, [&](uint64_t k) { cs.async_insert(k); },
              [&] {
                uint64_t sum = 0;
                cs.local_for_all([&](const uint64_t &, const size_t &c) { sum += c; });
                return sum;
              });
  }
  {
    ygm::container::map<uint64_t, uint64_t> m(world);
    ok &= run(world, "map", keys, n,
              [&](uint64_t k) { m.async_reduce(k, 1, std::plus<uint64_t>()); },
              [&] {
                uint64_t sum = 0;
                m.local_for_all([&](const uint64_t &, const uint64_t &c) { sum += c; });
                return sum;
              });
  }
  if (!scramble) { /* an array's keys are its indices */
    ygm::container::array<uint64_t> arr(world, keys);
    ok &= run(world, "array", keys, n,
              [&](uint64_t k) { arr.async_reduce(k, 1, std::plus<uint64_t>()); },
              [&] {
                uint64_t sum = 0;
                arr.local_for_all([&](const uint64_t &, const uint64_t &c) { sum += c; });
                return sum;
              });
  }
  return ok ? 0 : 1;
}
