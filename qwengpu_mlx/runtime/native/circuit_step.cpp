// One decode token of a compiled circuit in one call, on the CPU.
//
// The same Qwen3.5 layer arithmetic as qwengpu_mlx/runner.py (the MLX-ops path, the
// tested reference), in float32, over the runner's own narrow residual: RMSNorm, the
// merged input projection, the causal 4-tap conv + SiLU, q/k normalization, the decay
// and write gates, the Gated DeltaNet recurrence, the gated RMSNorm, the output
// projection into the residual; SwiGLU MLPs; the final norm and the tied logits. Every
// elementwise function (exp, sigmoid, log-add-exp, rsqrt) is MLX's own CPU
// implementation (mlx/backend/cpu/*_ops.h), and the build turns off floating-point
// contraction, so each is the same float operation. Products are stored by output row
// with their non-zeros in input order (the order the MLX path's sparse products sum
// in); the state's dot products over a head's key dims use eight partial sums. Where
// MLX sums in another order a result can differ in the last bit: the circuit's margins
// absorb that, and the runtime uses this step only after a probe launch matched the
// MLX-ops path (qwengpu_mlx/native_trust.py).
//
// Why one call: MLX's CPU back end costs about 10 us per operation, and a token of the
// circuit is about a thousand of them; here it is one. It runs on the caller's thread
// over NumPy buffers (not as an MLX primitive): handing each token to MLX's stream
// thread and back cost more than the token itself on a loaded machine.
//
// Why sparse: a token uses a sliver of the circuit (on the large machine about 150 of
// 10,400 residual values, 94 of 31,000 state columns and 460 of 93,000 MLP units are
// non-zero after the dot product's prompt), so the step (a plan's default) runs each
// product over its non-zero inputs only, by input column, and each head over the key
// dims its state or key uses, with activity bytes that remember what ever held a
// non-zero. Every term it skips is a signed zero, so each sum is the same float as the
// dense step's (plan(sparse=False), kept for the tests that compare the two bit for bit).
//
// Interface (qwengpu_mlx/native_step.py builds it): a Plan holds the program (an int
// stream of layer records naming offsets into the weight blobs) and float constants.
// run(plan, x [W], conv, state, activity, floats, ints, logits [V], residual [W]) ->
// smallest gate margin: conv and state are every mixer's conv and recurrent states
// packed in one float32 array each, activity their uint8 activity bytes (zeros for a
// fresh sequence); all three are updated in place.

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mlx/backend/cpu/binary_ops.h"
#include "mlx/backend/cpu/unary_ops.h"
#include "mlx_math.h"

namespace nb = nanobind;
namespace mx = mlx::core;

namespace {

enum Op : int { MIXER = 1, MLP = 2 };

inline float sigmoid(float v) { return sigmoid_lane(v); }
inline float silu(float v) { return v * sigmoid_lane(v); }
inline float exp_mlx(float v) { return exp_lane(v); }
inline float softplus(float v) { return mx::detail::LogAddExp{}(v, 0.0f); }
inline float rsqrt(float v) { return mx::detail::Rsqrt{}(v); }

// Where a profiling plan's time goes (bench/profile_step.py prints it).
enum Stage : int { MIX_IN, MIX_CONV, MIX_HEADS, MIX_OUT, MLP_GATE, MLP_ACT, MLP_DOWN, LOGITS, N_STAGES };
// The work a profiling plan counts (bench/profile_step.py --machines prints it per token).
enum Count : int { TERMS, ROWS, HEADS, RECURRENCES, KEY_DIMS, CHANNELS, CHANNELS_NONZERO, UNITS, LOGIT_TERMS, LIVE, QUIET, WOKEN,
                   REBUILT, INPUTS, KEPT, N_COUNTS };
thread_local long* counts = nullptr;  // the running plan's counts while it profiles, else null
inline void count(Count c, long n) {
  if (counts) counts[c] += n;
}

struct Plan {
  std::vector<int> program;
  std::vector<float> consts;
  int W = 0, V = 0;  // residual and logits widths: program[0], program[1]
  int blocks = 0;  // how many layer blocks to run (all of them but in tests)
  bool profile = false;
  bool profile_blocks = false;  // each layer block's thread CPU time instead of the stages'
  bool sparse = true;  // only what a token uses (false: every row, channel and head, for tests)
  int threads = 1;  // threads for the logits (the sparse step's one product as wide as the vocabulary)
  bool logits = true;  // false: the token's logits are not needed (a prompt token before the last)
  mutable std::vector<double> seconds = std::vector<double>(N_STAGES, 0.0);
  mutable long tokens = 0;
  mutable std::vector<long> work = std::vector<long>(N_COUNTS, 0);
  mutable std::vector<double> block_seconds;  // profile_blocks: each block's, then the logits'
  mutable std::vector<int> block_ops;  // profile_blocks: each block's record (MIXER or MLP)
};

// Adds the thread's CPU time since the last mark to a stage, when the plan profiles (CPU
// time: on a machine other processes load, wall time would count their turns too).
inline double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
struct Clock {
  const Plan& plan;
  double last = plan.profile ? thread_seconds() : 0.0;
  void mark(Stage s) {
    if (!plan.profile) return;
    double now = thread_seconds();
    plan.seconds[s] += now - last;
    last = now;
  }
};

void silu_all(float* __restrict v, int n) {
  for (int i = 0; i < n; i++) v[i] = v[i] * sigmoid_lane(v[i]);
}

// Reads the program stream front to back.
struct Cursor {
  const std::vector<int>& p;
  size_t i = 0;
  int next() {
    if (i >= p.size()) throw std::runtime_error("circuit_step: the program ends early");
    return p[i++];
  }
};

// The weight blobs; offsets come from the program.
struct Blobs {
  const float* f;
  const int* i;
};

// Whether any of v[0, n) is not a zero (a NaN is not): the values' bits without the sign,
// OR-ed in integer lanes, which vectorize where a float compare per value, unrolled for a
// short fixed n, became one scalar compare after another.
inline bool any_nonzero(const float* v, int n) {
  uint32_t acc = 0;
  for (int i = 0; i < n; i++) {
    uint32_t u;
    std::memcpy(&u, v + i, sizeof u);
    acc |= u << 1;
  }
  return acc != 0;
}

// y[0, n) = +0, writing only the 64-byte lines that hold a non-zero: a wide product's rows
// are mostly zeros already, and a line read stays clean where one written must go back.
inline void zero_nonzero_lines(float* __restrict y, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16)
    if (any_nonzero(y + i, 16)) std::fill(y + i, y + i + 16, 0.0f);
  std::fill(y + i, y + n, 0.0f);
}

// Rows of a product the non-zero inputs reached, summed in a buffer that is all zeros
// between uses (only the rows touched are cleared again): the sparse step's work is what
// a token uses, not what the machine could hold.
struct Scratch {
  std::vector<float> y;
  std::vector<unsigned char> seen;
  std::vector<int> touched;
  std::vector<int> inputs;  // the non-zero inputs of the product being scattered
  int every = 0;  // > 0: every row below it counts as touched (`touched` is empty)
  void fit(int n) {
    if ((int)y.size() < n) {
      y.resize(n, 0.0f);
      seen.resize(n, 0);
    }
  }
  // f(r) for every touched row
  template <typename F>
  void each(F f) const {
    if (every)
      for (int r = 0; r < every; r++) f(r);
    else
      for (int r : touched) f(r);
  }
  void clear() {
    if (every) zero_nonzero_lines(y.data(), every);
    every = 0;
    for (int r : touched) {
      y[r] = 0.0f;
      seen[r] = 0;
    }
    touched.clear();
  }
};

// The residual's dims that ever held a non-zero this token, ascending (the embedding's and
// every dim a product added into): an RMSNorm over these alone is the same float as over
// all W dims (see rms_live), and a token's residual holds a few hundred of ten thousand.
struct Live {
  std::vector<unsigned char> on;
  std::vector<int> dims;
  void start(const float* x, int W) {
    on.assign(W, 0);
    dims.clear();
    for (int i = 0; i < W; i++)
      if (x[i] != 0.0f) {
        on[i] = 1;
        dims.push_back(i);
      }
  }
  void add(int i) {
    if (on[i]) return;
    on[i] = 1;
    dims.insert(std::lower_bound(dims.begin(), dims.end(), i), i);
  }
};

// A product stored by output row: rowptr [out+1], cols, vals; targets [out] or none; and
// by input column (colptr [in+1], crows, cvals) for the sparse step.
struct Product {
  int out = 0, in = 0;
  const int* rowptr = nullptr;
  const int* cols = nullptr;
  const float* vals = nullptr;
  const int* targets = nullptr;
  const int* colptr = nullptr;
  const int* crows = nullptr;
  const float* cvals = nullptr;
  static Product read(Cursor& c, const Blobs& b) {
    Product q;
    q.out = c.next();
    q.in = c.next();
    q.rowptr = b.i + c.next();
    q.cols = b.i + c.next();
    q.vals = b.f + c.next();
    int t = c.next();
    q.targets = t < 0 ? nullptr : b.i + t;
    q.colptr = b.i + c.next();
    q.crows = b.i + c.next();
    q.cvals = b.f + c.next();
    return q;
  }
  float row(int r, const float* v) const {
    float s = 0.0f;
    for (int j = rowptr[r]; j < rowptr[r + 1]; j++) s += v[cols[j]] * vals[j];
    return s;
  }
  void apply(const float* v, float* y) const {
    for (int r = 0; r < out; r++) y[r] = row(r, v);
  }
  void add_into(const float* v, float* x) const {  // x[targets[r]] += (W v)[r]
    for (int r = 0; r < out; r++)
      if (rowptr[r] != rowptr[r + 1]) x[targets[r]] += row(r, v);
  }
  // The same row sums over the non-zero inputs only, column by column in input order, so
  // each row adds its non-zero terms in the order row() does. A skipped term is v * w
  // with v = 0, a signed zero: a sum that starts at +0 never becomes -0, and adding a
  // zero leaves any other value as it is, so every row sum is the same float.
  //
  // When the terms are at least half as many as the rows, remembering which rows they
  // reach costs more than taking every row as reached (`every`; a row no term reached
  // holds +0, which every user of the rows treats as nothing).
  //
  // Here over a block's normed inputs v[j] = (x[at[j]] * r) * nw[at[j]], which this writes
  // as it lists the non-zero ones: the norm and the listing in one pass over the inputs.
  void scatter_normed(const float* x, const int* at, const float* nw, float r, int n_in, float* v, Scratch& s) const {
    if (n_in != in) throw std::runtime_error("circuit_step: a block's inputs and its product's columns differ");
    count(INPUTS, in);
    s.inputs.resize(in + 1);
    int* nz = s.inputs.data();
    int n = 0;
    long terms = 0;
    for (int j = 0; j < in; j++) {
      float h = (x[at[j]] * r) * nw[at[j]];
      v[j] = h;
      nz[n] = j;
      bool on = h != 0.0f;
      n += on;
      terms += on * (colptr[j + 1] - colptr[j]);
    }
    scatter_listed(v, n, terms, s);
  }
  // Appends the non-zero inputs among v[a, b) to nz (n of them so far) and counts their terms.
  void nonzero_inputs(const float* v, int a, int b, int* nz, int& n, long& terms) const {
    for (int j = a; j < b; j++) {  // without branches: most inputs are zeros, in no pattern
      nz[n] = j;
      bool on = v[j] != 0.0f;
      n += on;
      terms += on * (colptr[j + 1] - colptr[j]);
    }
  }
  // scatter over the n non-zero inputs listed in s.inputs (ascending), `terms` terms in all:
  // a caller that knows where the non-zeros can be lists only those ranges.
  void scatter_listed(const float* v, int n, long terms, Scratch& s) const {
    s.fit(out);
    const int* nz = s.inputs.data();
    float* __restrict y = s.y.data();
    const int* __restrict rows = crows;
    const float* __restrict w = cvals;
    count(TERMS, terms);
    if (2 * terms >= out) {
      count(ROWS, out);
      for (int i = 0; i < n; i++) {
        int j = nz[i];
        float a = v[j];
        for (int k = colptr[j]; k < colptr[j + 1]; k++) y[rows[k]] += a * w[k];
      }
      s.every = out;
      return;
    }
    unsigned char* __restrict seen = s.seen.data();
    for (int i = 0; i < n; i++) {
      int j = nz[i];
      float a = v[j];
      for (int k = colptr[j]; k < colptr[j + 1]; k++) {
        int r = rows[k];
        if (!seen[r]) {
          seen[r] = 1;
          s.touched.push_back(r);
        }
        y[r] += a * w[k];
      }
    }
    count(ROWS, (long)s.touched.size());
  }
  // x[targets[r]] += y[r] over the touched rows, then the scratch is all zeros again: add_into
  // over the non-zero inputs, where a row no input reached adds +0, which leaves the residual
  // as it is (it never holds -0: its values are sums that start at +0). The targets are
  // distinct (native_step.py checks), so the order rows are added in is no matter; a row
  // that holds a zero is skipped: x + 0 is x.
  void add_touched(float* x, Scratch& s, Live* live) const {
    const float* y = s.y.data();
    s.each([&](int r) {
      if (y[r] == 0.0f) return;
      x[targets[r]] += y[r];
      if (live) live->add(targets[r]);
    });
    s.clear();
  }
  // apply into a dense y of `out` values over the non-zero inputs; a column that holds
  // every row in order (a tied logits column) is one contiguous loop.
  void apply_sparse(const float* v, float* __restrict y) const { apply_rows(v, y, 0, out, 0); }
  // apply_sparse's rows [r0, r1) from input column `first` on, over the partial sums
  // already in y (first = 0: from +0): each row adds its terms in input order, so threads
  // that take disjoint row ranges give the same floats.
  void apply_rows(const float* v, float* __restrict y, int r0, int r1, int first) const {
    if (first == 0) std::fill(y + r0, y + r1, 0.0f);
    for (int j = first; j < in; j++) {
      float a = v[j];
      if (a == 0.0f) continue;
      const int k0 = colptr[j];
      if (colptr[j + 1] - k0 == out) {
        const float* w = cvals + k0;
        for (int r = r0; r < r1; r++) y[r] += a * w[r];
      } else if (int n = colptr[j + 1] - k0; n > 0 && crows[k0] >= r0 && crows[k0] + n <= r1 &&
                 crows[k0 + n - 1] == crows[k0] + n - 1) {  // consecutive rows (one token kind's)
        float* __restrict yr = y + crows[k0];
        const float* w = cvals + k0;
        for (int i = 0; i < n; i++) yr[i] += a * w[i];
      } else {
        for (int k = k0; k < colptr[j + 1]; k++)
          if (crows[k] >= r0 && crows[k] < r1) y[crows[k]] += a * cvals[k];
      }
    }
  }
};

// A product's leading input columns that every row holds, the rows grouped by their
// values there (the tied logits: the 17 bipolar class columns give 17 groups, one per
// token kind). Every row of a group adds the same terms to +0 in the same order over
// those columns, so its partial sum after them is the group's: computed once per group,
// not once per row, it is the same float, and the rows go on from there in input order.
struct RowGroups {
  int cols = 0, groups = 0;
  const int* group_of = nullptr;  // [out]
  const float* vals = nullptr;  // [groups, cols]
  int n_runs = 0;  // consecutive rows of one group: (first, end, group) each, or none
  const int* runs = nullptr;
  int n_spans = 0;  // a run's rows cut into spans of a few hundred: (first, end, group) each
  const int* spans = nullptr;
  const float* most = nullptr;  // [in, spans]: the largest weight of a span's rows in each column (0 for one it lacks)
  const float* least = nullptr;  // [in, spans]: the smallest
  const float* size = nullptr;  // [in, spans]: the largest |weight|
  const int* at = nullptr;  // [spans + 1, in]: where a span's terms start in each column (by column: colptr, crows)
  static RowGroups read(Cursor& c, const Blobs& b) {
    RowGroups g;
    g.cols = c.next();
    g.groups = c.next();
    g.group_of = b.i + c.next();
    g.vals = b.f + c.next();
    g.n_runs = c.next();
    g.runs = b.i + c.next();
    g.n_spans = c.next();
    g.spans = b.i + c.next();
    g.most = b.f + c.next();
    g.least = b.f + c.next();
    g.size = b.f + c.next();
    g.at = b.i + c.next();
    return g;
  }
  // y[r] = the partial sum of row r's group, for r in [r0, r1): run by run where there are runs
  void start(const float* head, float* y, int r0, int r1) const {
    if (n_runs == 0) {
      for (int r = r0; r < r1; r++) y[r] = head[group_of[r]];
      return;
    }
    for (int i = 0; i < n_runs; i++) {
      int a = std::max(r0, runs[3 * i]), e = std::min(r1, runs[3 * i + 1]);
      if (a < e) std::fill(y + a, y + e, head[runs[3 * i + 2]]);
    }
  }
  // each group's partial sum over the shared columns
  void heads(const float* v, std::vector<float>& head) const {
    head.resize(groups);
    for (int g = 0; g < groups; g++) {
      float s = 0.0f;
      for (int j = 0; j < cols; j++)
        if (v[j] != 0.0f) s += v[j] * vals[(size_t)g * cols + j];
      head[g] = s;
    }
  }
  // y = p v (p.apply_sparse's floats) over `threads` threads by row ranges
  void apply(const Product& p, const float* v, float* y, int threads) const {
    std::vector<float> head;
    heads(v, head);
    if (counts) {
      long terms = (long)groups * cols + p.out;
      for (int j = cols; j < p.in; j++) terms += v[j] != 0.0f ? p.colptr[j + 1] - p.colptr[j] : 0;
      count(LOGIT_TERMS, terms);
    }
    auto rows = [&](int r0, int r1) {
      if (cols == 0) return p.apply_rows(v, y, r0, r1, 0);  // no shared columns: from +0
      start(head.data(), y, r0, r1);
      p.apply_rows(v, y, r0, r1, cols);
    };
    int out = p.out;
    if (threads <= 1 || out < 4096) return rows(0, out);
    std::vector<std::thread> pool;
    int per = (out + threads - 1) / threads;
    for (int t = 1; t < threads; t++) pool.emplace_back([&, t] { rows(std::min(out, t * per), std::min(out, (t + 1) * per)); });
    rows(0, std::min(out, per));
    for (auto& th : pool) th.join();
  }
};

struct Consts {
  float inv_hidden, eps, K, gain, delta, q_scale, k_scale, qk_eps;
};


// mx.fast.rms_norm over n values: x * rsqrt(mean(x^2) + eps), times w when given. The sum
// of squares adds the non-zero values alone, in order: a zero's square is +0, which leaves
// the sum (+0 or a positive float) as it is, and a head's keys and queries are mostly
// zeros, where one add after another was the cost.
void rms_norm(const float* x, int n, float eps, const float* w, float* y) {
  float s = 0.0f;
  int body = n - n % 8;
  for (int i = 0; i < body; i += 8) {
    if (any_nonzero(x + i, 8))
      for (int l = i; l < i + 8; l++)
        if (x[l] != 0.0f) s += x[l] * x[l];
  }
  for (int i = body; i < n; i++) s += x[i] * x[i];
  float r = rsqrt(s / n + eps);
  for (int i = 0; i < n; i++) y[i] = w ? (x[i] * r) * w[i] : x[i] * r;
}

// sum(a * b) over n (a multiple of 8) with eight partial sums, added pairwise.
inline float dot8(const float* a, const float* b, int n) {
  float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int d = 0; d < n; d += 8)
    for (int l = 0; l < 8; l++) p[l] += a[d + l] * b[d + l];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

// RMSNorm over the live dims of a residual `hidden` wide: rsqrt(sum(x^2)/hidden + eps).
float rms_factor(const float* x, int W, float inv_hidden, float eps) {
  int body = W - W % 8;
  float s = dot8(x, x, body);
  for (int i = body; i < W; i++) s += x[i] * x[i];
  return rsqrt(s * inv_hidden + eps);
}

// rms_factor over the dims that ever held a non-zero: every other dim adds 0 * 0 = +0 to
// its lane of dot8 (or to the tail sum), which leaves the sum as it is, and each lane
// still adds its dims in increasing order, so the factor is the same float.
float rms_live(const float* x, const Live& live, int W, float inv_hidden, float eps) {
  int body = W - W % 8;
  float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i < live.dims.size() && live.dims[i] < body; i++) {
    int d = live.dims[i];
    p[d & 7] += x[d] * x[d];
  }
  float s = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  for (; i < live.dims.size(); i++) s += x[live.dims[i]] * x[live.dims[i]];
  return rsqrt(s * inv_hidden + eps);
}

// One head's delta-rule step over its [Dv, Dk] state, stored by key dim (column d is
// s[d * Dv, (d + 1) * Dv): a key dim in use is a few cache lines, and the loops over the
// value dims vectorize); y [Dv] is read after the write. Over the key dims `act`
// (ascending): every other dim's state column is +0 and its key a zero, so its terms are
// signed zeros (see Product::scatter) and its column stays +0. Each value dim's two dot
// products use eight partial sums, lane l summing its dims d = l mod 8 in increasing
// order (dot8's order, the order the dense step always used).
void head_step(float* __restrict s, const float* __restrict q, const float* __restrict k,
               const float* __restrict v, float g, float beta, int Dv, const int* act, int n,
               float* __restrict y) {
  static thread_local std::vector<float> p, w, delta;  // the lanes' partial sums, all zeros from here
  p.assign(8 * Dv, 0.0f);
  w.assign(8 * Dv, 0.0f);
  delta.resize(Dv);
  for (int i = 0; i < n; i++) {
    int d = act[i];
    float* __restrict col = s + (size_t)d * Dv;
    float* __restrict lane = p.data() + (d & 7) * Dv;
    float kd = k[d];
    for (int e = 0; e < Dv; e++) {
      float t = col[e] * g;
      col[e] = t;
      lane[e] += t * kd;
    }
  }
  for (int e = 0; e < Dv; e++) {
    const float* c = p.data() + e;
    float kv = ((c[0] + c[Dv]) + (c[2 * Dv] + c[3 * Dv])) + ((c[4 * Dv] + c[5 * Dv]) + (c[6 * Dv] + c[7 * Dv]));
    delta[e] = (v[e] - kv) * beta;
  }
  for (int i = 0; i < n; i++) {
    int d = act[i];
    float* __restrict col = s + (size_t)d * Dv;
    float* __restrict lane = w.data() + (d & 7) * Dv;
    float kd = k[d], qd = q[d];
    for (int e = 0; e < Dv; e++) {
      float t = col[e] + kd * delta[e];
      col[e] = t;
      lane[e] += t * qd;
    }
  }
  for (int e = 0; e < Dv; e++) {
    const float* c = w.data() + e;
    y[e] = ((c[0] + c[Dv]) + (c[2 * Dv] + c[3 * Dv])) + ((c[4 * Dv] + c[5 * Dv]) + (c[6 * Dv] + c[7 * Dv]));
  }
}

// SiLU, skipping MLX's exp where it is known: below -88 exp(-v) is +inf, the sigmoid 0
// and the result v * 0 (-0), the same bits silu() gives.
inline float silu_skip(float v) { return v < -88.0f ? v * 0.0f : silu(v); }

// v[j] = silu(v[j]) * u at the n listed places of v (each non-zero; every other place is a
// zero, whose activation is a signed zero that adds nothing), one unit at a time
// (vectorized, the loop would take MLX's exp for every unit); the list keeps the places
// still non-zero, in order, and their count is returned.
__attribute__((optimize("no-tree-vectorize"))) int silu_listed(float* v, int* at, int n, float u) {
  int kept = 0;
  for (int i = 0; i < n; i++) {
    int j = at[i];
    v[j] = silu(v[j]) * u;
    at[kept] = j;
    kept += v[j] != 0.0f;
  }
  return kept;
}

// The scratch rows of the products that add into the residual, per thread (MLX runs a
// stream's tasks on one thread; the buffers are all zeros between uses).
struct Work {
  Scratch out;  // rows added into the residual
  Scratch proj;  // a mixer's input projection
  Scratch gate;  // an MLP's shared gate rows
  std::vector<float> g;  // an MLP's gate
  std::vector<float> o;  // a mixer's gated head outputs
  std::vector<int> ran;  // the mixer's heads that ran, ascending
  // a block's normed inputs and a head's vectors, kept from block to block (each is written
  // in full before it is read): an allocation per block and head cost more than their use
  std::vector<float> hi, q, kk, cv, y, vz;
  std::vector<int> act;
};

// A mixer's record in the program (native_step.py writes it).
struct MixerRec {
  const float* nw;
  const int* inputs;
  int n_in;
  Product w_in;
  int C, H, Dk, Dv;
  const float *cw, *dt_bias, *A_log, *gnorm;
  Product o_proj;
  int conv_off, state_off, aux_off;
  const float* taps;  // cw by tap, [4, C]: eight channels' taps are one vector each
  Product front;  // w_in's rows [q, k, beta, a]: every token (the sparse step)
  Product back;  // w_in's value and z rows head by head, [v_0, z_0, v_1, z_1, ...]: heads that run
  float in_limit;  // normed inputs within this keep every projection finite (native_step.py's inputs_limit)
  const int* taps_used;  // [2H]: per head, the conv taps its key channels read (bit t: tap t), then its query's
  static MixerRec read(Cursor& c, const Blobs& b) {
    MixerRec m;
    m.nw = b.f + c.next();
    m.inputs = b.i + c.next();
    m.n_in = c.next();
    m.w_in = Product::read(c, b);
    m.C = c.next(), m.H = c.next(), m.Dk = c.next(), m.Dv = c.next();
    m.cw = b.f + c.next();
    m.dt_bias = b.f + c.next();
    m.A_log = b.f + c.next();
    m.gnorm = b.f + c.next();
    m.o_proj = Product::read(c, b);
    m.conv_off = c.next(), m.state_off = c.next(), m.aux_off = c.next();
    m.taps = b.f + c.next();
    m.front = Product::read(c, b);
    m.back = Product::read(c, b);
    m.in_limit = b.f[c.next()];
    m.taps_used = b.i + c.next();
    if (m.Dk % 8) throw std::runtime_error("circuit_step: key dims must be a multiple of 8");
    return m;
  }
  // the block's normed inputs into hi (RMSNorm over the whole residual, then the read
  // dims: the dense step's; the sparse step norms them as it lists them, Product::scatter_normed)
  void normed(const float* x, int W, const Consts& k, std::vector<float>& hi) const {
    float r = rms_factor(x, W, k.inv_hidden, k.eps);
    hi.resize(n_in);
    for (int i = 0; i < n_in; i++) hi[i] = (x[inputs[i]] * r) * nw[inputs[i]];
  }
  // head h's decay this step, from its `a` projection row a[h]: exactly 1 in a circuit's
  // memory heads (A_log 0, dt_bias -30, in_proj_a 0)
  float decay(const float* a, int h) const { return exp_mlx(-exp_mlx(A_log[h]) * softplus(a[h] + dt_bias[h])); }
};

// A mixer's activity bytes in aux, in the order native_step.py's _aux_bytes counts and
// NativeStep.activity names them: the one place their offsets are written.
struct Activity {
  unsigned char* head_conv;  // [H] a conv channel of the head held a non-zero
  unsigned char* head_state;  // [H] a state column of the head is non-zero
  unsigned char* chan;  // [C] the channel's conv state held a non-zero
  unsigned char* col;  // [H * Dk] the state column holds a non-zero
  unsigned char* key_quiet;  // [H] steps in a row the head's key rows were zeros (quiet_now)
  unsigned char* query_quiet;  // [H] the same for its query rows
  unsigned char* oldest;  // [1] the conv ring's oldest row (Ring)
  unsigned char* stale;  // [H] the head's values' conv states are not kept (rebuild_values)
  static Activity of(const MixerRec& m, unsigned char* aux) {
    Activity a;
    a.head_conv = aux + m.aux_off;
    a.head_state = a.head_conv + m.H;
    a.chan = a.head_state + m.H;
    a.col = a.chan + m.C;
    a.key_quiet = a.col + (size_t)m.H * m.Dk;
    a.query_quiet = a.key_quiet + m.H;
    a.oldest = a.query_quiet + m.H;
    a.stale = a.oldest + 1;
    return a;
  }
};

// A mixer's conv state, three rows of C values, used as a ring: row `oldest` (a byte among
// the layer's activity bytes) holds the projection three steps back, the rows after it
// (mod 3) the two later ones. A step writes its projection over the oldest row and moves
// `oldest` on, where moving every value one row back wrote three rows: a head whose
// values alone move on writes one row of them. Three rows of the layer's normed inputs
// follow, a ring of the same steps: the values' rows of a head that does not run are not
// computed (the sparse step), and are rebuilt from these when it runs (rebuild_values).
struct Ring {
  float* s[3];  // oldest first: s[0] is read, then overwritten by this step's projection
  float* hi[3];  // the normed inputs of the same steps
  unsigned char* oldest;
  static Ring of(const MixerRec& m, float* conv, unsigned char* aux) {
    unsigned char* at = Activity::of(m, aux).oldest;
    float* rows = conv + m.conv_off;
    float* inputs = rows + 3 * (size_t)m.C;
    int o = *at;
    Ring r;
    for (int i = 0; i < 3; i++) {
      r.s[i] = rows + (size_t)((o + i) % 3) * m.C;
      r.hi[i] = inputs + (size_t)((o + i) % 3) * m.n_in;
    }
    r.oldest = at;
    return r;
  }
  // this step's normed inputs over the oldest row's, and the rings move on
  void move_on(const float* hi_now, int n_in) {
    std::copy(hi_now, hi_now + n_in, hi[0]);
    *oldest = (unsigned char)((*oldest + 1) % 3);
  }
};

// Head h's value channels in the ring's three rows, from the ring's normed inputs: each
// value is its row of the projection over that step's inputs (Product::row: every term in
// input order, a zero input's a signed zero), the float the step computed then, or would
// have. The channels that hold a non-zero are marked live.
void rebuild_values(const MixerRec& m, const Ring& ring, unsigned char* chan, unsigned char* head_conv, int h) {
  count(REBUILT, 1);
  int first = 2 * m.H * m.Dk + h * m.Dv;
  for (int i = 0; i < 3; i++)
    for (int e = 0; e < m.Dv; e++) {
      float v = m.back.row(2 * m.Dv * h + e, ring.hi[i]);
      ring.s[i][first + e] = v;
      if (v != 0.0f) chan[first + e] = 1, head_conv[h] = 1;
    }
}

// A Gated DeltaNet layer added into the residual x (every channel and head: the dense step).
void mixer(const MixerRec& m, const Consts& k, Clock& clock, float* x, int W, float* conv, unsigned char* aux,
           const float* state_in, float* state_out) {
  int C = m.C, H = m.H, Dk = m.Dk, Dv = m.Dv;
  std::vector<float> hi, proj(m.w_in.out);
  m.normed(x, W, k, hi);
  m.w_in.apply(hi.data(), proj.data());
  const float* qkv = proj.data();
  const float* z = qkv + C;
  const float* beta_in = z + H * Dv;
  const float* a = beta_in + H;
  clock.mark(MIX_IN);

  // conv over [prev0, prev1, prev2, now]; the new conv state is [prev1, prev2, now]
  Ring ring = Ring::of(m, conv, aux);
  std::vector<float> cv(C);
  for (int j = 0; j < C; j++) {
    float c0 = ring.s[0][j], c1 = ring.s[1][j], c2 = ring.s[2][j], c3 = qkv[j];
    const float* t = m.cw + 4 * j;
    cv[j] = c0 * t[0] + c1 * t[1] + c2 * t[2] + c3 * t[3];
    ring.s[0][j] = c3;
  }
  ring.move_on(hi.data(), m.n_in);
  silu_all(cv.data(), C);
  clock.mark(MIX_CONV);

  std::vector<float> q(Dk), kk(Dk), y(Dv), o(H * Dv);
  std::vector<int> every(Dk);
  for (int d = 0; d < Dk; d++) every[d] = d;
  for (int h = 0; h < H; h++) {
    rms_norm(cv.data() + h * Dk, Dk, k.qk_eps, nullptr, q.data());
    rms_norm(cv.data() + H * Dk + h * Dk, Dk, k.qk_eps, nullptr, kk.data());
    for (int d = 0; d < Dk; d++) {
      q[d] = k.q_scale * q[d];
      kk[d] = k.k_scale * kk[d];
    }
    float g = m.decay(a, h);
    size_t at = m.state_off + (size_t)h * Dv * Dk;
    if (state_out != state_in) std::copy(state_in + at, state_in + at + (size_t)Dv * Dk, state_out + at);
    head_step(state_out + at, q.data(), kk.data(), cv.data() + 2 * H * Dk + h * Dv, g, sigmoid(beta_in[h]), Dv,
              every.data(), Dk, y.data());
    rms_norm(y.data(), Dv, k.eps, m.gnorm, o.data() + h * Dv);
    for (int e = 0; e < Dv; e++) o[h * Dv + e] = silu(z[h * Dv + e]) * o[h * Dv + e];
  }
  clock.mark(MIX_HEADS);
  m.o_proj.add_into(o.data(), x);
  clock.mark(MIX_OUT);
}

// conv_channels' arithmetic for the eight live channels [j, j + 8), this step's projection
// `now` [8], lane by lane (each lane's float operations are the scalar ones, in the same
// order; they vectorize).
inline void conv_eight(const MixerRec& m, const Ring& ring, const float* now, int j, float* cv) {
  int C = m.C;
  float c0[8], c1[8], c2[8], c3[8];
  std::memcpy(c0, ring.s[0] + j, sizeof c0);
  std::memcpy(c1, ring.s[1] + j, sizeof c1);
  std::memcpy(c2, ring.s[2] + j, sizeof c2);
  std::memcpy(c3, now, sizeof c3);
  const float *t0 = m.taps + j, *t1 = t0 + C, *t2 = t1 + C, *t3 = t2 + C;
  for (int l = 0; l < 8; l++) cv[l] = c0[l] * t0[l] + c1[l] * t1[l] + c2[l] * t2[l] + c3[l] * t3[l];
  std::memcpy(ring.s[0] + j, c3, sizeof c3);
}

// One head's conv channels [first, first + n): their conv outputs before SiLU into cv, this
// step's projection now [n] written over the ring's oldest row; a channel whose conv state
// was never non-zero holds +0 there and gives 0.
void conv_channels(const MixerRec& m, const Ring& ring, const float* now, const unsigned char* chan, int first,
                   int n, float* cv) {
  for (int i = 0; i < n; i++) {
    int j = first + i;
    if (i % 8 == 0 && i + 8 <= n) {  // eight channels at once when all or none are live
      uint64_t eight;
      std::memcpy(&eight, chan + j, sizeof eight);
      if (eight == 0) {
        std::fill(cv + i, cv + i + 8, 0.0f);
        i += 7;
        continue;
      }
      if (eight == 0x0101010101010101ull) {
        count(CHANNELS, 8);
        conv_eight(m, ring, now + i, j, cv + i);
        i += 7;
        continue;
      }
    }
    if (!chan[j]) {
      cv[i] = 0.0f;
      continue;
    }
    count(CHANNELS, 1);
    float c0 = ring.s[0][j], c1 = ring.s[1][j], c2 = ring.s[2][j], c3 = now[i];
    const float* t = m.cw + 4 * j;
    cv[i] = c0 * t[0] + c1 * t[1] + c2 * t[2] + c3 * t[3];
    ring.s[0][j] = c3;
  }
}

// conv_channels' state update alone (for channels whose outputs no one reads).
void shift_channels(const Ring& ring, const float* now, const unsigned char* chan, int first, int n) {
  for (int i = 0; i < n; i++) {
    int j = first + i;
    if (i % 8 == 0 && i + 8 <= n) {
      uint64_t eight;
      std::memcpy(&eight, chan + j, sizeof eight);
      if (eight == 0) {
        i += 7;
        continue;
      }
      if (eight == 0x0101010101010101ull) {
        std::memcpy(ring.s[0] + j, now + i, 8 * sizeof(float));
        i += 7;
        continue;
      }
    }
    if (!chan[j]) continue;
    ring.s[0][j] = now[i];
  }
}

// silu_conv's values one by one (MLX's scalar SiLU, not a vectorized one).
__attribute__((optimize("no-tree-vectorize"), noinline)) void silu_run(float* v, int n) {
  static const float at_zero[2] = {sigmoid_lane(0.0f), sigmoid_lane(-0.0f)};
  for (int i = 0; i < n; i++) v[i] = v[i] == 0.0f ? v[i] * at_zero[std::signbit(v[i])] : silu_skip(v[i]);
}

// Whether v[0, n) holds only zeros (any_nonzero's test).
inline bool all_zero(const float* v, int n) { return !any_nonzero(v, n); }

// Whether a head's channels [first, first + n) read only zeros at the conv taps they use
// (`taps`: bit t for tap t; tap 3 is this step's projection `now`, taps 0-2 the ring's
// rows): their conv outputs are then signed zeros, whatever the quiet counts say.
bool zero_at_taps(const Ring& ring, const float* now, int first, int n, int taps) {
  for (int t = 0; t < 3; t++)
    if ((taps >> t & 1) && any_nonzero(ring.s[t] + first, n)) return false;
  return !(taps >> 3 & 1) || all_zero(now, n);
}

// Every |v[i]| at most `limit` (a NaN is not).
inline bool within(const float* v, int n, float limit) {
  int ok = 1;
  for (int i = 0; i < n; i++) ok &= std::fabs(v[i]) <= limit;
  return ok != 0;
}

// SiLU over n conv outputs in place (silu_skip's floats; a zero's is the zero times
// sigmoid(0), which is the zero itself: sigmoid(+-0) is 1/2). Runs of eight values that
// hold only zeros are left as they are, found by one vectorized test each: a head's keys
// and queries are mostly zeros.
void silu_conv(float* v, int n) {
  int body = n - n % 8, i = 0;
  while (i < body) {
    if (all_zero(v + i, 8)) {
      i += 8;
      continue;
    }
    int j = i + 8;
    while (j < body && !all_zero(v + j, 8)) j += 8;
    silu_run(v + i, j - i);
    i = j;
  }
  silu_run(v + body, n - body);
}

// Whether a key's conv outputs v [n] (before SiLU) may give a non-zero SiLU: one that is
// neither a zero nor below -88 (silu_skip's -0), or a NaN. When none may, every SiLU is a
// signed zero and the head has no key; one vectorized pass instead of n SiLUs (an idle
// head's key sits far below -88 until its address matches).
inline bool may_key(const float* v, int n) {
  int hit = 0;
  for (int i = 0; i < n; i++) hit |= !(v[i] < -88.0f) & (v[i] != 0.0f);
  return hit != 0;
}

// A head's key or query channels as quiet: `quiet` counts the steps in a row (up to 3)
// whose projection rows for them were all zeros, and becomes 0 at a step with a non-zero.
// The conv state holds the last three projections, so a count of 3 means every state
// value is +0 (a projection row is +0 or non-zero: its sum starts at +0 and adding a zero
// never gives -0). Returns whether the channels are quiet now: 3 before this step and
// zeros again, so their conv outputs are signed zeros and the shift leaves the state as
// it is (+0 moves onto +0, this step's +0 comes in). A count that errs, errs low: a head
// the step does not visit has all-zero rows, and its count simply waits.
inline bool quiet_now(unsigned char& quiet, const float* rows, int n) {
  bool zero = all_zero(rows, n), was = quiet >= 3;
  quiet = zero ? (unsigned char)std::min(3, quiet + 1) : 0;
  return zero && was;
}

// The key dims of a head's state that run (ascending, into act; returns how many): those
// whose state column already holds a non-zero (hc, which this marks) or whose key is
// non-zero now. Eight dims at a time: most hold neither.
int active_key_dims(unsigned char* __restrict hc, const float* __restrict kk, int Dk, int* __restrict act) {
  int n = 0;
  for (int d0 = 0; d0 < Dk; d0 += 8) {
    uint64_t eight;
    std::memcpy(&eight, hc + d0, sizeof eight);
    if (eight == 0 && all_zero(kk + d0, 8)) continue;
    for (int d = d0; d < d0 + 8; d++)
      if (hc[d] || kk[d] != 0.0f) {
        hc[d] = 1;
        act[n++] = d;
      }
  }
  return n;
}

// A head's gated output o [Dv] = silu(z) * o in place; where o is a zero and z finite the
// product is a signed zero, and +0 is written (the output product skips zeros). Eight dims
// at a time: a group of zeros with finite gates needs no SiLU.
void output_gate(float* __restrict o, const float* __restrict z, int Dv) {
  for (int e0 = 0; e0 < Dv; e0 += 8) {
    int e1 = std::min(e0 + 8, Dv), other = 0;
    for (int e = e0; e < e1; e++) other |= (o[e] != 0.0f) | !std::isfinite(z[e]);
    if (!other) {
      std::fill(o + e0, o + e1, 0.0f);
      continue;
    }
    for (int e = e0; e < e1; e++) o[e] = (o[e] == 0.0f && std::isfinite(z[e])) ? 0.0f : silu(z[e]) * o[e];
  }
}

// The mixer over what is live: the projection's rows its non-zero inputs reach, the conv
// channels that ever held a non-zero, and per head only the key dims whose state column
// or key is non-zero (the activity bytes in aux record both). A head with neither a key
// nor a state writes y = +0 and adds nothing; when its key channels are quiet (see
// quiet_now) it has no key without its key's conv, and quiet query channels are left as
// they are. Only the heads that run compute their value and z rows: a head that does not
// run leaves its values' conv states stale (Activity::stale) and rebuilds them from the
// ring's normed inputs when it runs again (rebuild_values: the same floats). conv, state
// and aux are updated in place.
void mixer_sparse(const MixerRec& m, const Consts& k, Clock& clock, Work& w, float* x, Live& live, int W,
                  float* conv, float* state, unsigned char* aux) {
  int H = m.H, Dk = m.Dk, Dv = m.Dv, QK = 2 * H * Dk;
  Activity act_bytes = Activity::of(m, aux);
  unsigned char *head_conv = act_bytes.head_conv, *head_state = act_bytes.head_state, *chan = act_bytes.chan;
  unsigned char *col = act_bytes.col, *key_quiet = act_bytes.key_quiet, *query_quiet = act_bytes.query_quiet;
  unsigned char* stale = act_bytes.stale;
  std::vector<float>& hi = w.hi;
  hi.resize(m.n_in);
  // the front rows [q, k, beta, a] the non-zero inputs reach; every other row is +0 in
  // w.proj.y, as apply_sparse leaves it
  m.front.scatter_normed(x, m.inputs, m.nw, rms_live(x, live, W, k.inv_hidden, k.eps), m.n_in, hi.data(), w.proj);
  const float* proj = w.proj.y.data();
  auto mark = [&](int r) {
    if (proj[r] != 0.0f && !chan[r]) {
      chan[r] = 1;
      head_conv[(r % (H * Dk)) / Dk] = 1;
    }
  };
  if (w.proj.every)
    for (int r = 0; r < QK; r++) {
      if (r % 8 == 0 && r + 8 <= QK) {  // eight channels that have all held a non-zero, or are all zeros
        uint64_t eight;
        std::memcpy(&eight, chan + r, sizeof eight);
        if (eight == 0x0101010101010101ull || all_zero(proj + r, 8)) {
          r += 7;
          continue;
        }
      }
      mark(r);
    }
  else
    for (int r : w.proj.touched)
      if (r < QK) mark(r);
  const float* beta_in = proj + QK;
  const float* a = beta_in + H;
  Ring ring = Ring::of(m, conv, aux);
  clock.mark(MIX_IN);

  std::vector<float> &q = w.q, &kk = w.kk, &cv = w.cv, &y = w.y, &vz = w.vz;
  q.resize(Dk), kk.resize(Dk), cv.resize(2 * Dk + Dv), y.resize(Dv), vz.resize(2 * Dv);
  std::vector<int>& act = w.act;
  act.resize(Dk);
  std::vector<float>& o = w.o;  // each head's gated output: written (and read) only for heads that run
  o.resize((size_t)H * Dv);
  std::vector<int>& ran = w.ran;
  ran.clear();
  // A head with a state but no key and no query this step (each quiet, or reading zeros at
  // the conv taps it uses: their conv outputs are signed zeros) and a decay of exactly 1
  // leaves its state as it is and writes nothing: each column d is (s_d * 1) + k_d * delta
  // with k_d a signed zero, which is s_d (a state value is never -0: it starts +0, and a
  // sum is -0 only when both terms are) while delta is finite, and its output is
  // silu(z) * (a signed zero), +0 while z is finite. Those, and the ring's projections
  // that meet a zero tap, are finite when the normed inputs, this step's and the ring's,
  // are within m.in_limit; such a head is left as it is, its values stale.
  int inputs_within = -1;  // unknown until a head asks
  auto kept_as_is = [&](int h) {
    if (m.decay(a, h) != 1.0f) return false;
    if (inputs_within < 0)
      inputs_within = within(hi.data(), m.n_in, m.in_limit) && within(ring.hi[0], m.n_in, m.in_limit) &&
                      within(ring.hi[1], m.n_in, m.in_limit) && within(ring.hi[2], m.n_in, m.in_limit);
    return inputs_within == 1;
  };
  for (int h = 0; h < H; h++) {
    if (!head_conv[h] && !head_state[h]) {  // no key, no state, no query: nothing to run
      stale[h] = 1;
      continue;
    }
    count(HEADS, 1);
    const float* key_now = proj + H * Dk + h * Dk;
    const float* query_now = proj + h * Dk;
    bool was_silent = key_quiet[h] >= 3;
    bool key_silent = quiet_now(key_quiet[h], key_now, Dk);
    count(WOKEN, was_silent && key_quiet[h] == 0);
    bool query_silent = quiet_now(query_quiet[h], query_now, Dk);
    if (head_state[h] && (key_silent || zero_at_taps(ring, key_now, H * Dk + h * Dk, Dk, m.taps_used[h])) &&
        (query_silent || zero_at_taps(ring, query_now, h * Dk, Dk, m.taps_used[H + h])) && kept_as_is(h)) {
      // the key's and query's conv states move on (a quiet one's are zeros and stay so)
      if (!key_silent) shift_channels(ring, key_now, chan, H * Dk + h * Dk, Dk);
      if (!query_silent) shift_channels(ring, query_now, chan, h * Dk, Dk);
      count(KEPT, 1);
      stale[h] = 1;
      continue;
    }
    if (key_silent && !head_state[h]) {  // no key and no state: only the query's conv states move on
      count(QUIET, 1);
      stale[h] = 1;
      if (!query_silent) shift_channels(ring, query_now, chan, h * Dk, Dk);
      continue;
    }
    // the key first: a head with neither a key nor a state needs no query or value, and
    // the query's conv states only move on
    conv_channels(m, ring, key_now, chan, H * Dk + h * Dk, Dk, cv.data() + Dk);
    if (counts) count(CHANNELS_NONZERO, std::count_if(cv.begin() + Dk, cv.begin() + 2 * Dk, [](float v) { return v != 0.0f; }));
    bool keyed = may_key(cv.data() + Dk, Dk);
    if (keyed || head_state[h]) {
      silu_conv(cv.data() + Dk, Dk);
      keyed = !all_zero(cv.data() + Dk, Dk);
    }
    if (!keyed && !head_state[h]) {
      if (!query_silent) shift_channels(ring, query_now, chan, h * Dk, Dk);
      stale[h] = 1;
      continue;
    }
    if (stale[h]) {
      rebuild_values(m, ring, chan, head_conv, h);
      stale[h] = 0;
    }
    int values = QK + h * Dv;  // the head's first value channel
    for (int e = 0; e < 2 * Dv; e++) vz[e] = m.back.row(2 * Dv * h + e, hi.data());
    count(TERMS, m.back.rowptr[2 * Dv * (h + 1)] - m.back.rowptr[2 * Dv * h]);
    for (int e = 0; e < Dv; e++)
      if (vz[e] != 0.0f && !chan[values + e]) chan[values + e] = 1, head_conv[h] = 1;
    conv_channels(m, ring, query_now, chan, h * Dk, Dk, cv.data());
    conv_channels(m, ring, vz.data(), chan, values, Dv, cv.data() + 2 * Dk);
    if (counts) {
      auto nonzero = [](float v) { return v != 0.0f; };
      count(CHANNELS_NONZERO, std::count_if(cv.begin(), cv.begin() + Dk, nonzero) +
                                  std::count_if(cv.begin() + 2 * Dk, cv.end(), nonzero));
    }
    silu_conv(cv.data(), Dk);
    silu_conv(cv.data() + 2 * Dk, Dv);
    count(RECURRENCES, 1);
    ran.push_back(h);
    rms_norm(cv.data(), Dk, k.qk_eps, nullptr, q.data());
    rms_norm(cv.data() + Dk, Dk, k.qk_eps, nullptr, kk.data());
    for (int d = 0; d < Dk; d++) {
      q[d] = k.q_scale * q[d];
      kk[d] = k.k_scale * kk[d];
    }
    float g = m.decay(a, h);
    int n = active_key_dims(col + (size_t)h * Dk, kk.data(), Dk, act.data());
    head_state[h] |= n > 0;
    count(KEY_DIMS, n);
    float* st = state + m.state_off + (size_t)h * Dv * Dk;
    head_step(st, q.data(), kk.data(), cv.data() + 2 * Dk, g, sigmoid(beta_in[h]), Dv, act.data(), n, y.data());
    rms_norm(y.data(), Dv, k.eps, m.gnorm, o.data() + h * Dv);
    output_gate(o.data() + h * Dv, vz.data() + Dv, Dv);
  }
  ring.move_on(hi.data(), m.n_in);
  w.proj.clear();
  clock.mark(MIX_HEADS);
  // the output product over the heads that ran: every other head's output is +0
  w.out.inputs.resize((size_t)H * Dv + 1);
  int n = 0;
  long terms = 0;
  for (int h : ran) m.o_proj.nonzero_inputs(o.data(), h * Dv, (h + 1) * Dv, w.out.inputs.data(), n, terms);
  m.o_proj.scatter_listed(o.data(), n, terms, w.out);
  m.o_proj.add_touched(x, w.out, &live);
  clock.mark(MIX_OUT);
}

// An MLP's record in the program (native_step.py writes it).
struct MlpRec {
  const float* nw;
  const int* inputs;
  int n_in;
  int paired;
  Product gate;
  int one_col = -1;
  const float* bias = nullptr;
  int up_single;
  int up_col = -1;
  const float* up_val = nullptr;
  Product up, down;
  int U;
  const float* bias_max = nullptr;  // [1]: the largest |ONE weight| of a paired gate
  static MlpRec read(Cursor& c, const Blobs& b) {
    MlpRec m;
    m.nw = b.f + c.next();
    m.inputs = b.i + c.next();
    m.n_in = c.next();
    m.paired = c.next();
    m.gate = Product::read(c, b);
    if (m.paired) {
      m.one_col = c.next();
      m.bias = b.f + c.next();
    }
    m.up_single = c.next();
    if (m.up_single) {
      m.up_col = c.next();
      m.up_val = b.f + c.next();
    } else {
      m.up = Product::read(c, b);
    }
    m.down = Product::read(c, b);
    m.U = c.next();
    m.bias_max = b.f + c.next();
    return m;
  }
};

// The smallest margin over the first unit of each clamp pair: g1 = A r (s - theta + 1/2) + D r / 2.
float gate_margin(const float* g, int U, const float* x, const float* nw, float r, int one_pos, const Consts& k) {
  float margin = std::numeric_limits<float>::infinity();
  float rr = ((x[one_pos] * r) * nw[one_pos]) / k.K;
  for (int j = 0; j < U; j += 2) margin = std::fmin(margin, std::fabs((g[j] - k.delta * rr / 2) / (k.gain * rr)));
  return margin;
}

// A paired gate's units g[j] = s[j / 2] + one * bias[j], set to +0 below -88 (where SiLU
// is a signed zero), and the units left non-zero listed in `on` ascending; returns how
// many. The arithmetic runs over every unit in vectors (the same two float operations per
// unit), the listing over sixteen units at a time: a token leaves about one unit in a
// hundred non-zero, so most sixteen hold none. g has room for U rounded up to 16.
int clamped_gate(const float* __restrict s, float one, const float* __restrict bias, int U, float* __restrict g,
                 int* __restrict on) {
  int pairs = U / 2;
  for (int r = 0; r < pairs; r++) {
    float a = s[r];
    float v0 = a + one * bias[2 * r], v1 = a + one * bias[2 * r + 1];
    g[2 * r] = v0 < -88.0f ? 0.0f : v0;
    g[2 * r + 1] = v1 < -88.0f ? 0.0f : v1;
  }
  if (U % 2) {
    float v = s[pairs] + one * bias[U - 1];
    g[U - 1] = v < -88.0f ? 0.0f : v;
  }
  int end = (U + 15) / 16 * 16;
  std::fill(g + U, g + end, 0.0f);
  int n = 0;
  for (int i = 0; i < end; i += 16) {
    if (!any_nonzero(g + i, 16)) continue;
    for (int l = 0; l < 16; l++) {
      on[n] = i + l;
      n += g[i + l] != 0.0f;
    }
  }
  return n;
}

// The sparse MLP (a paired gate, one up value uv for every unit): the gate over its
// non-zero inputs (w.gate.y holds +0 in every row none reached, as apply_sparse leaves
// it), the activation only where the gate is above -88 (elsewhere SiLU is -0), the down
// product over the non-zero units. When uv is 0 and every gate value is finite, each
// activation is silu(g) * 0, a signed zero that adds nothing, so the MLP adds nothing and
// neither the activations nor the down product are computed. A gate value is finite when
// its row is finite and one * bias is (|one * bias| <= |one * bias_max|: rounding is
// monotonic; an unreached row's g is +0 + one * bias).
float mlp_sparse(const MlpRec& m, const Consts& k, Clock& clock, Work& w, float* x, Live& live, float* hi,
                 float r, int one_pos, bool track) {
  int U = m.U;
  m.gate.scatter_normed(x, m.inputs, m.nw, r, m.n_in, hi, w.gate);  // hi: the normed inputs, written here
  const float* s = w.gate.y.data();
  float one = hi[m.one_col], uv = hi[m.up_col] * m.up_val[0];
  bool idle = uv == 0.0f && std::isfinite(one * m.bias_max[0]);
  if (idle)
    w.gate.each([&](int row) {
      for (int j = 2 * row; j < 2 * row + 2 && j < U; j++) idle = idle && std::isfinite(s[row] + one * m.bias[j]);
    });
  float margin = std::numeric_limits<float>::infinity();
  std::vector<float>& g = w.g;
  if (track) {
    g.resize(U);
    for (int j = 0; j < U; j++) g[j] = s[j / 2] + one * m.bias[j];
    margin = gate_margin(g.data(), U, x, m.nw, r, one_pos, k);
  }
  if (idle) {
    w.gate.clear();
    clock.mark(MLP_GATE);
    return margin;
  }
  count(UNITS, U);
  // the gate, its clamp and the list of units left non-zero in one pass (a token leaves
  // about one in a hundred): only those are activated, and those still non-zero reach the
  // down product, in ascending order, as nonzero_inputs would list them
  g.resize(U + 16);
  std::vector<int>& on = w.out.inputs;
  on.resize(U + 1);
  int n = clamped_gate(s, one, m.bias, U, g.data(), on.data());
  w.gate.clear();
  clock.mark(MLP_GATE);
  n = silu_listed(g.data(), on.data(), n, uv);
  long terms = 0;
  for (int i = 0; i < n; i++) terms += m.down.colptr[on[i] + 1] - m.down.colptr[on[i]];
  clock.mark(MLP_ACT);
  m.down.scatter_listed(g.data(), n, terms, w.out);
  m.down.add_touched(x, w.out, &live);
  clock.mark(MLP_DOWN);
  return margin;
}

// A SwiGLU MLP added into the residual x; returns its smallest gate margin (or +inf).
// `live` (the sparse step): the norm over the live dims, and a paired gate with one up
// value runs as mlp_sparse; every other MLP densely.
float mlp(const MlpRec& m, const Consts& k, Clock& clock, Work& w, float* x, int W, int one_pos, bool track,
          Live* live) {
  float r = live ? rms_live(x, *live, W, k.inv_hidden, k.eps) : rms_factor(x, W, k.inv_hidden, k.eps);
  int U = m.U;
  std::vector<float>& hi = w.hi;  // a block's inputs: the mixer's are done with
  hi.resize(m.n_in);
  if (live && m.paired && m.up_single) return mlp_sparse(m, k, clock, w, x, *live, hi.data(), r, one_pos, track);
  for (int i = 0; i < m.n_in; i++) hi[i] = (x[m.inputs[i]] * r) * m.nw[m.inputs[i]];
  std::vector<float> g(U), u(U);
  if (m.paired) {  // g = repeat(shared(x), 2) + x[ONE] * bias
    std::vector<float> s(m.gate.out);
    m.gate.apply(hi.data(), s.data());
    float one = hi[m.one_col];
    for (int j = 0; j < U; j++) g[j] = s[j / 2] + one * m.bias[j];
  } else {
    m.gate.apply(hi.data(), g.data());
  }
  float margin = track ? gate_margin(g.data(), U, x, m.nw, r, one_pos, k) : std::numeric_limits<float>::infinity();
  clock.mark(MLP_GATE);
  if (m.up_single) {
    float uv = hi[m.up_col] * m.up_val[0];
    for (int j = 0; j < U; j++) u[j] = uv;
  } else {
    m.up.apply(hi.data(), u.data());
  }
  for (int j = 0; j < U; j++) g[j] = silu(g[j]) * u[j];
  clock.mark(MLP_ACT);
  m.down.add_into(g.data(), x);
  if (live)  // every row of the down product with a term added into its dim
    for (int row = 0; row < m.down.out; row++)
      if (m.down.rowptr[row] != m.down.rowptr[row + 1]) live->add(m.down.targets[row]);
  clock.mark(MLP_DOWN);
  return margin;
}

// The greedy token and its margin from logits [V]: (the first index of the largest value,
// that value minus the largest of all the others, in float32), what the launch loop takes
// from a token's logits (qwengpu_mlx/runtime/generate.py), in one pass instead of
// handing the vocabulary's logits to NumPy. A NaN anywhere gives index -1: the caller then
// takes NumPy's own path (argmax's and max's NaN rules). Only a zero margin can differ
// from NumPy's, in its sign (which of a tied +0 and -0 a maximum returns).
//
// One pass in sixteen lanes that vectorize (the large machine's 37k logits took three
// scalar ones): each lane keeps its two largest values as a multiset (a value held twice
// is both; the smaller of x and the lane's largest can only raise the second) and where
// its largest first appeared (a later equal value is not larger). The first index of the
// largest value is the smallest such place among the lanes that hold it; the runner-up
// is the largest of the rest of the lanes' pairs.
struct TopTwo {
  long at = -1;
  float first = -std::numeric_limits<float>::infinity(), second = first;
  bool nan = false;
  void take(float x, long i) {  // one more value, at a later index than any before
    nan |= x != x;
    float low = x < first ? x : first;
    second = low > second ? low : second;
    if (x > first || at < 0) first = x, at = i;
  }
  void merge(float x, long i) {  // one more value, at any index (a tie goes to the smaller index)
    nan |= x != x;
    if (at < 0 || x > first || (x == first && i < at)) {
      second = at < 0 ? second : (first > second ? first : second);
      first = x, at = i;
    } else {
      second = x > second ? x : second;
    }
  }
};

TopTwo top_two_of(const float* __restrict v, long n) {
  constexpr int L = 16;
  const float lowest = -std::numeric_limits<float>::infinity();
  float m1[L], m2[L];
  int where[L];
  unsigned odd[L];
  for (int l = 0; l < L; l++) m1[l] = m2[l] = lowest, where[l] = -1, odd[l] = 0;
  int i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; l++) {
      float x = v[i + l];
      odd[l] |= x != x;
      float low = x < m1[l] ? x : m1[l];
      m2[l] = low > m2[l] ? low : m2[l];
      where[l] = x > m1[l] || where[l] < 0 ? i + l : where[l];
      m1[l] = x > m1[l] ? x : m1[l];
    }
  TopTwo t;
  if (i > 0) {  // the lanes: the first place of the largest, then the pairs of the others
    int lead = 0;
    for (int l = 1; l < L; l++)
      if (m1[l] > m1[lead] || (m1[l] == m1[lead] && where[l] < where[lead])) lead = l;
    t.first = m1[lead], t.at = where[lead], t.second = m2[lead];
    for (int l = 0; l < L; l++) {
      t.nan |= odd[l] != 0;
      if (l == lead) continue;
      float top = m1[l] > m2[l] ? m1[l] : m2[l];
      t.second = top > t.second ? top : t.second;
    }
  }
  for (; i < n; i++) t.take(v[i], i);
  return t;
}

// top_two_of the tied logits p v without computing every row: true when it decided.
// A span's rows are its group's partial sum over the shared columns plus their own terms,
// so none is above the span's bound: head + sum_j (v_j times the span's largest weight in
// column j, or its smallest where v_j < 0), plus the sum's rounding (n terms: at most about
// n 2^-24 of |head| + sum_j |v_j| |w_j|; 2^-10 of it is allowed, |w_j| the span's largest). The span of the highest
// bound is computed first, then every span whose bound is not below the runner-up so far
// (it only rises, so a span passed over stays below it): none of the others holds the
// first or second row. Each row is the same float as RowGroups::apply's (its terms in
// input order from the group's partial sum). Not decided (the caller takes every row): no
// groups or spans, or a non-finite input or row.
bool top_two_grouped(const RowGroups& g, const Product& p, const float* v, TopTwo& t) {
  if (g.cols == 0 || g.n_spans == 0) return false;
  static thread_local std::vector<int> nz;
  static thread_local std::vector<float> head, y, bound, slack;
  nz.clear();
  for (int j = 0; j < p.in; j++) {
    if (!std::isfinite(v[j])) return false;
    if (j >= g.cols && v[j] != 0.0f) nz.push_back(j);
  }
  g.heads(v, head);
  const int S = g.n_spans;
  bound.assign(S, 0.0f);
  slack.assign(S, 0.0f);
  for (int j : nz) {
    const float x = v[j], ax = std::fabs(x);
    const float* __restrict hi = (x > 0.0f ? g.most : g.least) + (size_t)j * S;
    const float* __restrict size = g.size + (size_t)j * S;
    float* __restrict b = bound.data();
    float* __restrict sl = slack.data();
    for (int i = 0; i < S; i++) {
      b[i] += x * hi[i];
      sl[i] += ax * size[i];
    }
  }
  int top = 0;
  for (int i = 0; i < S; i++) {
    float h = head[g.spans[3 * i + 2]];
    bound[i] = h + bound[i] + (std::fabs(h) + slack[i]) * (1.0f / 1024);
    top = bound[i] > bound[top] ? i : top;
  }
  t = TopTwo{};
  long terms = (long)g.groups * g.cols + (long)S * nz.size();
  auto take = [&](int i) {
    int a = g.spans[3 * i], e = g.spans[3 * i + 1];
    y.assign(e - a, head[g.spans[3 * i + 2]]);
    const int* from = g.at + (size_t)i * p.in;
    const int* to = from + p.in;
    for (int j : nz) {
      const int* lo = p.crows + from[j];
      const int* hi = p.crows + to[j];
      const float* w = p.cvals + from[j];
      const float x = v[j];
      if (hi - lo == e - a)  // every row of the span, in order
        for (int r = 0; r < e - a; r++) y[r] += x * w[r];
      else
        for (const int* r = lo; r < hi; r++, w++) y[*r - a] += x * *w;
      terms += hi - lo;
    }
    TopTwo run = top_two_of(y.data(), e - a);
    if (run.nan) return false;
    t.merge(run.first, a + run.at);
    if (e - a > 1) t.merge(run.second, std::numeric_limits<long>::max());
    return true;
  };
  if (!take(top)) return false;
  for (int i = 0; i < S; i++)
    if (i != top && !(bound[i] < t.second) && !take(i)) return false;
  count(LOGIT_TERMS, terms);
  return true;
}

// The program's header (native_step.py writes it), read before its layer records.
struct Header {
  int W, V, n_blocks, track, one_pos, n_out;
  const int* out_pos;
  const float* final_norm;
  Product logits_of;  // the tied output rows [V, n_out], by row
  RowGroups logit_groups;
  static Header read(Cursor& c, const Blobs& b) {
    Header h;
    h.W = c.next(), h.V = c.next(), h.n_blocks = c.next(), h.track = c.next(), h.one_pos = c.next();
    h.n_out = c.next();
    h.out_pos = b.i + c.next();
    h.final_norm = b.f + c.next();
    h.logits_of = Product::read(c, b);
    h.logit_groups = RowGroups::read(c, b);
    return h;
  }
};

// Every stale head's values' conv states rebuilt in conv (rebuild_values), as the dense
// step holds them: what a reader of the conv states sees (NativeStep.settled, on copies).
void settle(const Plan& plan, float* conv, unsigned char* aux, const float* floats, const int* ints) {
  Cursor c{plan.program};
  Blobs b{floats, ints};
  int n_blocks = Header::read(c, b).n_blocks;
  for (int blk = 0; blk < n_blocks; blk++) {
    int op = c.next();
    if (op == MLP) {
      MlpRec::read(c, b);
      continue;
    }
    if (op != MIXER) throw std::runtime_error("circuit_step: unknown layer record");
    MixerRec m = MixerRec::read(c, b);
    Ring ring = Ring::of(m, conv, aux);
    Activity a = Activity::of(m, aux);
    for (int h = 0; h < m.H; h++)
      if (a.stale[h]) rebuild_values(m, ring, a.chan, a.head_conv, h), a.stale[h] = 0;
  }
}

// The buffers of one token: the input residual, the states it updates in place, the
// weight blobs, and where the logits and the residual after the last block go.
struct Buffers {
  const float* x;
  float* conv;
  float* state;
  unsigned char* aux;
  const float* floats;
  const int* ints;
  float* logits;
  float* residual;
};

// One token: returns the smallest gate margin (+inf unless the plan tracks margins).
// `greedy`: the token's top_two_of its logits, from the groups that can hold them where
// top_two_grouped decides (io.logits is then not written), else from every row.
float run(const Plan& plan, const Buffers& io, TopTwo* greedy = nullptr) {
  Cursor c{plan.program};
  Blobs b{io.floats, io.ints};
  Header head = Header::read(c, b);
  int W = head.W, n_blocks = head.n_blocks, track = head.track, one_pos = head.one_pos, n_out = head.n_out;
  const int* out_pos = head.out_pos;
  const float* final_norm = head.final_norm;
  const Product& logits_of = head.logits_of;
  const RowGroups& logit_groups = head.logit_groups;
  const auto& kc = plan.consts;
  Consts k{kc[0], kc[1], kc[2], kc[3], kc[4], kc[5], kc[6], kc[7]};
  if (plan.blocks >= 0) n_blocks = plan.blocks;

  // the residual stream in the caller's output buffer: no copy in a vector and out again
  if (io.residual != io.x) std::memmove(io.residual, io.x, (size_t)W * sizeof(float));
  float* x = io.residual;
  float margin = std::numeric_limits<float>::infinity();
  Clock clock{plan};
  counts = plan.profile ? plan.work.data() : nullptr;
  static thread_local Work work;
  static thread_local Live live;
  if (plan.sparse) live.start(x, W);
  if (plan.profile_blocks && (int)plan.block_seconds.size() != n_blocks + 1) {
    plan.block_seconds.assign(n_blocks + 1, 0.0);
    plan.block_ops.assign(n_blocks, 0);
  }
  double started = plan.profile_blocks ? thread_seconds() : 0.0;
  auto block_done = [&](int blk) {
    double now = thread_seconds();
    plan.block_seconds[blk] += now - started;
    started = now;
  };
  for (int blk = 0; blk < n_blocks; blk++) {
    int op = c.next();
    if (plan.profile_blocks) plan.block_ops[blk] = op;
    if (op == MIXER) {
      MixerRec m = MixerRec::read(c, b);
      if (plan.sparse)
        mixer_sparse(m, k, clock, work, x, live, W, io.conv, io.state, io.aux);
      else  // in place: each conv channel and state row is read before it is written
        mixer(m, k, clock, x, W, io.conv, io.aux, io.state, io.state);
    } else if (op == MLP) {
      MlpRec m = MlpRec::read(c, b);
      margin = std::fmin(margin, mlp(m, k, clock, work, x, W, one_pos, track != 0, plan.sparse ? &live : nullptr));
    } else {
      throw std::runtime_error("circuit_step: unknown layer record");
    }
    if (plan.profile_blocks) block_done(blk);
  }
  if (plan.logits) {
    float r = plan.sparse ? rms_live(x, live, W, k.inv_hidden, k.eps) : rms_factor(x, W, k.inv_hidden, k.eps);
    std::vector<float> hn(n_out);
    for (int i = 0; i < n_out; i++) hn[i] = (x[out_pos[i]] * r) * final_norm[i];
    bool decided = greedy && plan.sparse && top_two_grouped(logit_groups, logits_of, hn.data(), *greedy);
    if (!decided) {
      if (plan.sparse)
        logit_groups.apply(logits_of, hn.data(), io.logits, plan.threads);
      else
        logits_of.apply(hn.data(), io.logits);
      if (greedy) *greedy = top_two_of(io.logits, head.V);
    }
  }
  clock.mark(LOGITS);
  if (plan.profile_blocks) block_done(n_blocks);
  plan.tokens += 1;
  if (plan.sparse) count(LIVE, (long)live.dims.size());
  return margin;
}

std::shared_ptr<Plan> make_plan(std::vector<int> program, std::vector<float> consts, int blocks, bool profile,
                                bool sparse, int threads, bool logits, bool profile_blocks) {
  if (consts.size() != 8) throw std::invalid_argument("circuit_step: a plan takes 8 constants");
  if (program.size() < 2) throw std::invalid_argument("circuit_step: a program starts with W and V");
  auto p = std::make_shared<Plan>();
  p->W = program[0];  // the program's header: W, V, ...
  p->V = program[1];
  p->program = std::move(program);
  p->consts = std::move(consts);
  p->blocks = blocks;
  p->profile = profile;
  p->sparse = sparse;
  p->threads = std::max(1, threads);
  p->logits = logits;
  p->profile_blocks = profile_blocks && !profile;
  return p;
}

template <typename T>
using Vec = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// The token on the caller's thread, the GIL released: conv, state and aux are updated in
// place, logits [V] and residual [W] written. Sizes are checked against the plan; the
// state arrays' sizes are the caller's (native_step.NativeStep makes them).
Buffers buffers_of(const Plan& plan, Vec<const float> x, Vec<float> conv, Vec<float> state, Vec<uint8_t> aux,
                   Vec<const float> floats, Vec<const int32_t> ints, Vec<float> logits, Vec<float> residual) {
  if ((int)x.shape(0) != plan.W || (int)residual.shape(0) != plan.W || (int)logits.shape(0) != plan.V)
    throw std::invalid_argument("circuit_step: x and residual take W values, logits V");
  return Buffers{x.data(), conv.data(), state.data(), aux.data(), floats.data(), ints.data(), logits.data(),
                 residual.data()};
}

float run_token(const std::shared_ptr<Plan>& plan, Vec<const float> x, Vec<float> conv, Vec<float> state,
                Vec<uint8_t> aux, Vec<const float> floats, Vec<const int32_t> ints, Vec<float> logits,
                Vec<float> residual) {
  Buffers io = buffers_of(*plan, x, conv, state, aux, floats, ints, logits, residual);
  nb::gil_scoped_release quiet;
  return run(*plan, io);
}

// run_token, then the greedy token and its logit margin as top_two gives them from the
// logits: (index, margin, smallest gate margin); index -1 where a logit is NaN, the
// logits then all written for the caller's NaN rules.
std::tuple<long, float, float> run_token_top_two(const std::shared_ptr<Plan>& plan, Vec<const float> x,
                                                 Vec<float> conv, Vec<float> state, Vec<uint8_t> aux,
                                                 Vec<const float> floats, Vec<const int32_t> ints, Vec<float> logits,
                                                 Vec<float> residual) {
  if (!plan->logits) throw std::invalid_argument("circuit_step: a plan without logits has no greedy token");
  Buffers io = buffers_of(*plan, x, conv, state, aux, floats, ints, logits, residual);
  TopTwo t;
  float margin;
  {
    nb::gil_scoped_release quiet;
    margin = run(*plan, io, &t);
  }
  if (t.nan || t.at < 0) return {-1, 0.0f, margin};
  return {t.at, t.first - t.second, margin};
}

// For tests: a product and its row groups as the header holds the tied logits (program:
// Product then RowGroups records over the blobs), applied to v: ((index, margin) from
// every row, (index, margin) from top_two_grouped, whether it decided).
std::tuple<std::pair<long, float>, std::pair<long, float>, bool> logits_top_two(
    std::vector<int> program, Vec<const float> floats, Vec<const int32_t> ints, Vec<const float> v) {
  Cursor c{program};
  Blobs b{floats.data(), ints.data()};
  Product p = Product::read(c, b);
  RowGroups g = RowGroups::read(c, b);
  if ((int)v.shape(0) != p.in) throw std::invalid_argument("circuit_step: v takes the product's inputs");
  std::vector<float> y(p.out);
  g.apply(p, v.data(), y.data(), 1);
  TopTwo all = top_two_of(y.data(), p.out), some;
  bool decided = top_two_grouped(g, p, v.data(), some);
  return {{all.at, all.first - all.second}, {some.at, some.first - some.second}, decided};
}

std::pair<long, float> top_two(Vec<const float> logits) {
  long n = (long)logits.shape(0);
  if (n == 0 || n > std::numeric_limits<int>::max()) return {-1, 0.0f};
  TopTwo t;
  {
    nb::gil_scoped_release quiet;
    t = top_two_of(logits.data(), n);
  }
  if (t.nan) return {-1, 0.0f};
  return {t.at, t.first - t.second};
}

// How many of the floats with bit patterns 0, stride, 2 stride, ... (all 2^32 for stride
// 1) get another exp or sigmoid from mlx_math.h than from MLX's own CPU functions.
long math_mismatches(long stride) {
  long bad = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += (uint64_t)stride) {
    uint32_t w = (uint32_t)u;
    float v;
    std::memcpy(&v, &w, sizeof v);
    float a = mx::detail::Exp{}(v), b = exp_lane(v), c = mx::detail::Sigmoid{}(v), d = sigmoid_lane(v);
    bad += std::memcmp(&a, &b, sizeof a) != 0 || std::memcmp(&c, &d, sizeof c) != 0;
  }
  return bad;
}

}  // namespace

NB_MODULE(_circuit_step, m) {
  m.doc() = "One decode token of a compiled circuit, in one call";
  nb::class_<Plan>(m, "Plan");
  m.def("plan", &make_plan, nb::arg("program"), nb::arg("consts"), nb::arg("blocks") = -1,
        nb::arg("profile") = false, nb::arg("sparse") = true, nb::arg("threads") = 1, nb::arg("logits") = true,
        nb::arg("profile_blocks") = false);
  m.def("top_two", &top_two, nb::arg("logits"));
  // seconds per stage (the Stage order) and tokens run, of a profiling plan
  m.def("profile", [](const std::shared_ptr<Plan>& p) { return std::make_pair(p->seconds, p->tokens); });
  // the work a profiling plan counted (the COUNTS order), over its tokens
  m.def("work", [](const std::shared_ptr<Plan>& p) { return p->work; });
  // a profile_blocks plan's CPU seconds per layer block (then the final norm and logits'),
  // each block's record (MIXER or MLP), and the tokens it ran
  m.def("block_profile", [](const std::shared_ptr<Plan>& p) {
    return std::make_tuple(p->block_seconds, p->block_ops, p->tokens);
  });
  m.attr("MIXER") = (int)MIXER;
  m.attr("MLP") = (int)MLP;
  m.attr("COUNTS") = std::vector<std::string>{
      "product terms (scatters)", "product rows reached", "heads visited", "heads run (key or state)",
      "state key dims run", "conv channels computed", "conv outputs non-zero", "MLP units run", "logit terms",
      "residual dims live", "heads quiet (no key conv)", "quiet keys woken", "heads' values rebuilt",
      "block inputs normed", "heads kept (a state, no key or query)"};
  m.attr("STAGES") = std::vector<std::string>{"mixer: norm+projection", "mixer: conv", "mixer: normalize+gates+recurrence+gated norm",
                                              "mixer: out", "mlp: norm+gate", "mlp: activation", "mlp: down", "final norm+logits"};
  m.def(
      "settle",
      [](const std::shared_ptr<Plan>& plan, Vec<float> conv, Vec<uint8_t> aux, Vec<const float> floats,
         Vec<const int32_t> ints) { settle(*plan, conv.data(), aux.data(), floats.data(), ints.data()); },
      nb::arg("plan"), nb::arg("conv"), nb::arg("aux"), nb::arg("floats"), nb::arg("ints"));
  m.def("run", &run_token, nb::arg("plan"), nb::arg("x"), nb::arg("conv"), nb::arg("state"), nb::arg("aux"),
        nb::arg("floats"), nb::arg("ints"), nb::arg("logits"), nb::arg("residual"));
  m.def("run_top_two", &run_token_top_two, nb::arg("plan"), nb::arg("x"), nb::arg("conv"), nb::arg("state"),
        nb::arg("aux"), nb::arg("floats"), nb::arg("ints"), nb::arg("logits"), nb::arg("residual"));
  m.def("logits_top_two", &logits_top_two, nb::arg("program"), nb::arg("floats"), nb::arg("ints"), nb::arg("v"));
  m.def("math_mismatches", &math_mismatches, nb::arg("stride"));
}
