/* qwengpu prelude, warp part (included by prelude.h for clang only): CUDA's 32-lane
 * warp functions as routines of the machine's ordinary instructions.
 *
 * A thread block here holds at most 32 threads, so the CUDA warp is the thread block
 * and a thread's lane is its linear index in the block (%laneid: the host reads it as
 * the machine's linear thread index, %warpid as 0). The machine's own warps are 4
 * lanes that do not run in step with each other, so a 32-lane exchange goes through
 * shared memory between two barriers:
 *
 *   shuffle: st lanes[lane] = var; bar.sync; j = source lane; d = lanes[j]; bar.sync
 *   vote:    @pred atom.add votes, 1 << lane; bar.sync; d = votes; bar.sync;
 *            @pred atom.add votes, -(1 << lane)       (votes is 0 again)
 *
 * The source lane follows PTX's shfl.sync (offset and lane taken modulo 32, clamped to
 * the lane's width-segment); a lane whose source is out of its segment, or does not
 * exist (blockDim < 32; CUDA leaves that read undefined), gets its own value. The
 * second barrier keeps a fast lane from overwriting scratch another lane still reads.
 *
 * Where the machine's 4-lane hardware shuffle gives the same lanes -- a segment of at
 * most 4 lanes, or an xor by a constant below 4 (the machine's warp w holds lanes
 * 4w..4w+3, so the partner is in the same machine warp) -- it is used instead: one
 * instruction, no barrier. Its operands are the 4-lane encoding (2-bit fields, member
 * mask 0xf), which the host accepts only in that form.
 *
 * Refused when compiled, at the user's call: a member mask that is not the constant
 * 0xffffffff (a barrier waits for the whole block; a partial mask means diverged lanes),
 * a constant width that is not a power of two up to 32.
 */
#ifndef QWENGPU_PRELUDE_WARPS_H
#define QWENGPU_PRELUDE_WARPS_H

#define QWENGPU_FULL_MASK_ONLY                                                                    \
  __attribute__((diagnose_if(!__builtin_constant_p(mask) || mask != 0xffffffffu,                  \
                             "warp operations here need the member mask to be the constant "       \
                             "0xffffffff (the warp is the whole thread block and waits at a "      \
                             "barrier; a partial or computed mask is not supported): call it "     \
                             "where every thread of the block does, with 0xffffffff",              \
                             "error")))
#define QWENGPU_WIDTH_POWER_OF_TWO                                                                \
  __attribute__((diagnose_if(width < 1 || width > 32 || (width & (width - 1)) != 0,              \
                             "the shuffle width must be a power of two from 1 to 32", "error")))

/* One word per lane for shuffles; one word that holds 0 between votes. */
static __shared__ int qwengpu_warp_shuffle_scratch[QWENGPU_WARP_SIZE];
static __shared__ unsigned qwengpu_warp_vote_word;

static __device__ __forceinline__ __qwengpu_nodebug unsigned __qwengpu_lane(void) {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  __builtin_assume(lane < QWENGPU_WARP_SIZE);
  return lane;
}

/* Threads in the block: the lanes that exist (a 2-D or 3-D block's lanes are its linear
   thread indices). */
static __device__ __forceinline__ __qwengpu_nodebug unsigned __qwengpu_block_threads(void) {
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  __builtin_assume(n <= QWENGPU_WARP_SIZE);
  return n;
}

/* Every lane publishes var, then reads lane src's (its own where src is its own). */
static __device__ __forceinline__ __qwengpu_nodebug int __qwengpu_exchange(int var, unsigned lane,
                                                                           unsigned src) {
  qwengpu_warp_shuffle_scratch[lane] = var;
  __qwengpu_syncthreads();
  int got = qwengpu_warp_shuffle_scratch[src];
  __qwengpu_syncthreads();
  return got;
}

/* The source lane j of PTX's shfl.sync for a lane, or the lane itself where j is out of
   the lane's segment (PTX: the lane keeps its own value). */
static __device__ __forceinline__ __qwengpu_nodebug unsigned __qwengpu_source(int mode, unsigned lane,
                                                                              unsigned b, int width) {
  unsigned last = width - 1;  /* the lane bits inside a segment */
  unsigned first = lane & ~last, end = lane | last;
  b &= 31u;
  unsigned j;
  bool ok;
  if (mode == 0) {        /* idx */
    j = first | (b & last);
    ok = true;
  } else if (mode == 1) { /* up */
    j = lane - b;
    ok = (int)j >= (int)first;
  } else if (mode == 2) { /* down */
    j = lane + b;
    ok = j <= end;
  } else {                /* xor */
    j = lane ^ b;
    ok = j <= end;
  }
  /* a whole-warp segment holds every lane: only existence is left to check */
  return ok ? j : lane;
}

/* The 4-lane hardware shuffle gives the 32-lane result: a constant width of at most 4
   lanes (with an offset below 4 for up/down/xor: a larger one leaves the segment), or an
   xor by a constant below 4. */
#define QWENGPU_HARDWARE_SHUFFLE(mode, b, width)                                              \
  (__builtin_constant_p(width) && __builtin_constant_p(b) && (((unsigned)(b) & 31u) < 4u) &&  \
       ((mode) == 3 || (width) <= 4) ||                                                       \
   (mode) == 0 && __builtin_constant_p(width) && (width) <= 4)
/* The 4-lane c operand: segment mask and clamp in 2-bit fields. */
#define QWENGPU_SHFL_C4(width) ((((width) >= 4 ? 0 : 4 - (width)) << 8) | 3)
#define QWENGPU_SHFL_C4_UP(width) (((width) >= 4 ? 0 : 4 - (width)) << 8)

static __device__ __forceinline__ __qwengpu_nodebug int __qwengpu_shuffle(int mode, int var, unsigned b,
                                                                          int width) {
  if (QWENGPU_HARDWARE_SHUFFLE(mode, b, width)) {
    if (mode == 0) return __nvvm_shfl_sync_idx_i32(0xf, var, b, QWENGPU_SHFL_C4(width));
    if (mode == 1) return __nvvm_shfl_sync_up_i32(0xf, var, b, QWENGPU_SHFL_C4_UP(width));
    if (mode == 2) return __nvvm_shfl_sync_down_i32(0xf, var, b, QWENGPU_SHFL_C4(width));
    return __nvvm_shfl_sync_bfly_i32(0xf, var, b, QWENGPU_SHFL_C4(width));
  }
  unsigned lane = __qwengpu_lane();
  unsigned src = __qwengpu_source(mode, lane, b, width);
  int got = __qwengpu_exchange(var, lane, src);
  /* A lane past the thread block (blockDim < 32) was never launched: CUDA leaves its
     value undefined; it reads 0 here, as the lanes of a partial warp read on a GPU
     (the canonical 16-8-4-2-1 reduction sums a 4-thread block). */
  return src < __qwengpu_block_threads() ? got : 0;
}

#define QWENGPU_SHFL(name, mode)                                                                 \
  static __device__ __forceinline__ __qwengpu_nodebug int name(unsigned mask, int var, int b,     \
                                                               int width = QWENGPU_WARP_SIZE)     \
      QWENGPU_FULL_MASK_ONLY QWENGPU_WIDTH_POWER_OF_TWO {                                         \
    return __qwengpu_shuffle(mode, var, (unsigned)b, width);                                      \
  }                                                                                              \
  static __device__ __forceinline__ __qwengpu_nodebug unsigned name(unsigned mask, unsigned var,  \
                                                                    int b,                        \
                                                                    int width = QWENGPU_WARP_SIZE) \
      QWENGPU_FULL_MASK_ONLY QWENGPU_WIDTH_POWER_OF_TWO {                                         \
    return (unsigned)__qwengpu_shuffle(mode, (int)var, (unsigned)b, width);                       \
  }
QWENGPU_SHFL(__shfl_sync, 0)
QWENGPU_SHFL(__shfl_up_sync, 1)
QWENGPU_SHFL(__shfl_down_sync, 2)
QWENGPU_SHFL(__shfl_xor_sync, 3)
#undef QWENGPU_SHFL

/* The lanes whose pred holds, as bits: distinct bits added into a word that is 0
   between votes; each voter takes its bit back out after everyone has read it. */
static __device__ __forceinline__ __qwengpu_nodebug unsigned __qwengpu_vote(int pred) {
  unsigned bit = 1u << __qwengpu_lane();
  if (pred) atomicAdd(&qwengpu_warp_vote_word, bit);
  __qwengpu_syncthreads();
  unsigned votes = *(volatile unsigned *)&qwengpu_warp_vote_word;
  __qwengpu_syncthreads();
  if (pred) atomicAdd(&qwengpu_warp_vote_word, 0u - bit);
  return votes;
}

static __device__ __forceinline__ __qwengpu_nodebug unsigned __ballot_sync(unsigned mask, int pred)
    QWENGPU_FULL_MASK_ONLY {
  return __qwengpu_vote(pred);
}
static __device__ __forceinline__ __qwengpu_nodebug int __any_sync(unsigned mask, int pred)
    QWENGPU_FULL_MASK_ONLY {
  return __qwengpu_vote(pred) != 0;
}
static __device__ __forceinline__ __qwengpu_nodebug int __all_sync(unsigned mask, int pred)
    QWENGPU_FULL_MASK_ONLY {
  return __qwengpu_vote(!pred) == 0;
}
/* The lanes executing it: every thread of the block, when all of them do (in diverged
   code the vote's barrier stops the launch with a barrier-deadlock error). */
static __device__ __forceinline__ __qwengpu_nodebug unsigned __activemask(void) {
  return __qwengpu_vote(1);
}
/* The warp is the thread block: __syncwarp is its barrier. */
static __device__ __forceinline__ __qwengpu_nodebug void __syncwarp(unsigned mask = 0xffffffffu)
    QWENGPU_FULL_MASK_ONLY {
  __qwengpu_syncthreads();
}

#undef QWENGPU_HARDWARE_SHUFFLE
/* QWENGPU_FULL_MASK_ONLY and QWENGPU_WIDTH_POWER_OF_TWO stay defined for the 64-bit
   shuffles of prelude_wide64.h, which undefines them. */
#endif /* QWENGPU_PRELUDE_WARPS_H */
