// One decode token of a compiled circuit as a single MLX primitive on the CPU.
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
// absorb that, and the runtime uses this primitive only after a probe launch matched
// the MLX-ops path (qwengpu_mlx/native_trust.py).
//
// Why one primitive: MLX's CPU back end costs about 10 us per operation, and a token
// of the circuit is about a thousand of them; here it is one.
//
// Interface (qwengpu_mlx/native_step.py builds it): a Plan holds the program (an int
// stream of layer records naming offsets into the weight blobs) and float constants.
// step(plan, [x, conv, state, floats, ints]) -> [logits [1, V], conv, state,
// smallest gate margin [1], residual after the last block [1, W]]: conv and state are
// every mixer's conv and recurrent states packed in one float32 array each.

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mlx/backend/cpu/binary_ops.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/backend/cpu/unary_ops.h"
#include "mlx/mlx.h"
#include "mlx/primitives.h"
#include "mlx_math.h"

namespace nb = nanobind;
namespace mx = mlx::core;

namespace {

enum Op : int { MIXER = 1, MLP = 2 };
enum Input : int { X = 0, CONV = 1, STATE = 2, FLOATS = 3, INTS = 4 };

inline float sigmoid(float v) { return sigmoid_lane(v); }
inline float silu(float v) { return v * sigmoid_lane(v); }
inline float exp_mlx(float v) { return exp_lane(v); }
inline float softplus(float v) { return mx::detail::LogAddExp{}(v, 0.0f); }
inline float rsqrt(float v) { return mx::detail::Rsqrt{}(v); }

// Where a profiling plan's time goes (bench/profile_step.py prints it).
enum Stage : int { MIX_IN, MIX_CONV, MIX_HEADS, MIX_OUT, MLP_GATE, MLP_ACT, MLP_DOWN, LOGITS, N_STAGES };

struct Plan {
  std::vector<int> program;
  std::vector<float> consts;
  int V = 0;  // logits: program[1]
  int blocks = 0;  // how many layer blocks to run (all of them but in tests)
  bool profile = false;
  mutable std::vector<double> seconds = std::vector<double>(N_STAGES, 0.0);
  mutable long tokens = 0;
};

// Adds the time since the last mark to a stage, when the plan profiles.
struct Clock {
  const Plan& plan;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void mark(Stage s) {
    if (!plan.profile) return;
    auto now = std::chrono::steady_clock::now();
    plan.seconds[s] += std::chrono::duration<double>(now - last).count();
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

// A product stored by output row: rowptr [out+1], cols, vals; targets [out] or none.
struct Product {
  int out = 0;
  const int* rowptr = nullptr;
  const int* cols = nullptr;
  const float* vals = nullptr;
  const int* targets = nullptr;
  static Product read(Cursor& c, const Blobs& b) {
    Product q;
    q.out = c.next();
    q.rowptr = b.i + c.next();
    q.cols = b.i + c.next();
    q.vals = b.f + c.next();
    int t = c.next();
    q.targets = t < 0 ? nullptr : b.i + t;
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
};

struct Consts {
  float inv_hidden, eps, K, gain, delta, q_scale, k_scale, qk_eps;
};


// mx.fast.rms_norm over n values: x * rsqrt(mean(x^2) + eps), times w when given.
void rms_norm(const float* x, int n, float eps, const float* w, float* y) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) s += x[i] * x[i];
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

// One head's delta-rule step over its [Dv, Dk] state; y [Dv] is read after the write.
// Each row's two dot products use eight partial sums (dot8's order), in one pass each.
void head_step(const float* s0, float* s, const float* __restrict q,
               const float* __restrict k, const float* __restrict v, float g, float beta, int Dk, int Dv,
               float* __restrict y) {
  for (int e = 0; e < Dv; e++) {
    const float* src = s0 + (size_t)e * Dk;  // the same row as `row` when updated in place
    float* row = s + (size_t)e * Dk;
    float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int d = 0; d < Dk; d += 8)
      for (int l = 0; l < 8; l++) {
        float t = src[d + l] * g;
        row[d + l] = t;
        p[l] += t * k[d + l];
      }
    float kv = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    float delta = (v[e] - kv) * beta;
    float w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int d = 0; d < Dk; d += 8)
      for (int l = 0; l < 8; l++) {
        float t = row[d + l] + k[d + l] * delta;
        row[d + l] = t;
        w[l] += t * q[d + l];
      }
    y[e] = ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
  }
}

// A Gated DeltaNet layer added into the residual x.
void mixer(Cursor& c, const Blobs& b, const Consts& k, Clock& clock, float* x, int W, const float* conv_in,
           float* conv_out, const float* state_in, float* state_out) {
  const float* nw = b.f + c.next();
  const int* inputs = b.i + c.next();
  int n_in = c.next();
  Product w_in = Product::read(c, b);
  int C = c.next(), H = c.next(), Dk = c.next(), Dv = c.next();
  const float* cw = b.f + c.next();
  const float* dt_bias = b.f + c.next();
  const float* A_log = b.f + c.next();
  const float* gnorm = b.f + c.next();
  Product o_proj = Product::read(c, b);
  int conv_off = c.next(), state_off = c.next();
  if (Dk % 8) throw std::runtime_error("circuit_step: key dims must be a multiple of 8");

  float r = rms_factor(x, W, k.inv_hidden, k.eps);
  std::vector<float> hi(n_in), proj(w_in.out);
  for (int i = 0; i < n_in; i++) hi[i] = (x[inputs[i]] * r) * nw[inputs[i]];
  w_in.apply(hi.data(), proj.data());
  const float* qkv = proj.data();
  const float* z = qkv + C;
  const float* beta_in = z + H * Dv;
  const float* a = beta_in + H;
  clock.mark(MIX_IN);

  // conv over [prev0, prev1, prev2, now]; the new conv state is [prev1, prev2, now]
  const float* prev = conv_in + conv_off;
  float* next = conv_out + conv_off;
  std::vector<float> conv(C);
  for (int j = 0; j < C; j++) {
    float c0 = prev[j], c1 = prev[C + j], c2 = prev[2 * C + j], c3 = qkv[j];
    const float* t = cw + 4 * j;
    conv[j] = c0 * t[0] + c1 * t[1] + c2 * t[2] + c3 * t[3];
    next[j] = c1;
    next[C + j] = c2;
    next[2 * C + j] = c3;
  }
  silu_all(conv.data(), C);
  clock.mark(MIX_CONV);

  std::vector<float> q(Dk), kk(Dk), y(Dv), o(H * Dv);
  for (int h = 0; h < H; h++) {
    rms_norm(conv.data() + h * Dk, Dk, k.qk_eps, nullptr, q.data());
    rms_norm(conv.data() + H * Dk + h * Dk, Dk, k.qk_eps, nullptr, kk.data());
    for (int d = 0; d < Dk; d++) {
      q[d] = k.q_scale * q[d];
      kk[d] = k.k_scale * kk[d];
    }
    float g = exp_mlx(-exp_mlx(A_log[h]) * softplus(a[h] + dt_bias[h]));
    size_t at = state_off + (size_t)h * Dv * Dk;
    head_step(state_in + at, state_out + at, q.data(), kk.data(), conv.data() + 2 * H * Dk + h * Dv, g,
              sigmoid(beta_in[h]), Dk, Dv, y.data());
    rms_norm(y.data(), Dv, k.eps, gnorm, o.data() + h * Dv);
    for (int e = 0; e < Dv; e++) o[h * Dv + e] = silu(z[h * Dv + e]) * o[h * Dv + e];
  }
  clock.mark(MIX_HEADS);
  o_proj.add_into(o.data(), x);
  clock.mark(MIX_OUT);
}

// A SwiGLU MLP added into the residual x; returns its smallest gate margin (or +inf).
float mlp(Cursor& c, const Blobs& b, const Consts& k, Clock& clock, float* x, int W, int one_pos, bool track) {
  const float* nw = b.f + c.next();
  const int* inputs = b.i + c.next();
  int n_in = c.next();
  int paired = c.next();
  Product gate = Product::read(c, b);
  int one_col = -1;
  const float* bias = nullptr;
  if (paired) {
    one_col = c.next();
    bias = b.f + c.next();
  }
  int up_single = c.next();
  int up_col = -1;
  const float* up_val = nullptr;
  Product up;
  if (up_single) {
    up_col = c.next();
    up_val = b.f + c.next();
  } else {
    up = Product::read(c, b);
  }
  Product down = Product::read(c, b);
  int U = c.next();

  float r = rms_factor(x, W, k.inv_hidden, k.eps);
  std::vector<float> hi(n_in), g(U), u(U);
  for (int i = 0; i < n_in; i++) hi[i] = (x[inputs[i]] * r) * nw[inputs[i]];
  if (paired) {  // g = repeat(shared(x), 2) + x[ONE] * bias
    std::vector<float> s(gate.out);
    gate.apply(hi.data(), s.data());
    float one = hi[one_col];
    for (int j = 0; j < U; j++) g[j] = s[j / 2] + one * bias[j];
  } else {
    gate.apply(hi.data(), g.data());
  }
  float margin = std::numeric_limits<float>::infinity();
  if (track) {  // first unit of each clamp pair: g1 = A r (s - theta + 1/2) + D r / 2
    float rr = ((x[one_pos] * r) * nw[one_pos]) / k.K;
    for (int j = 0; j < U; j += 2) margin = std::fmin(margin, std::fabs((g[j] - k.delta * rr / 2) / (k.gain * rr)));
  }
  clock.mark(MLP_GATE);
  if (up_single) {
    float uv = hi[up_col] * up_val[0];
    for (int j = 0; j < U; j++) u[j] = uv;
  } else {
    up.apply(hi.data(), u.data());
  }
  for (int j = 0; j < U; j++) g[j] = silu(g[j]) * u[j];
  clock.mark(MLP_ACT);
  down.add_into(g.data(), x);
  clock.mark(MLP_DOWN);
  return margin;
}

// The token itself, run as a task on the CPU stream after the tasks that compute its inputs.
void run(const Plan& plan, const std::vector<mx::array>& in, std::vector<mx::array>& out) {
  Cursor c{plan.program};
  Blobs b{in[FLOATS].data<float>(), in[INTS].data<int>()};
  int W = c.next(), V = c.next(), n_blocks = c.next(), track = c.next(), one_pos = c.next();
  int n_out = c.next();
  const int* out_pos = b.i + c.next();
  const float* final_norm = b.f + c.next();
  Product logits_of = Product::read(c, b);  // the tied output rows [V, n_out], by row
  const auto& kc = plan.consts;
  Consts k{kc[0], kc[1], kc[2], kc[3], kc[4], kc[5], kc[6], kc[7]};
  if (plan.blocks >= 0) n_blocks = plan.blocks;

  std::vector<float> x(in[X].data<float>(), in[X].data<float>() + W);
  const float* conv_in = in[CONV].data<float>();
  const float* state_in = in[STATE].data<float>();
  float* conv_out = out[1].data<float>();
  float* state_out = out[2].data<float>();
  float margin = std::numeric_limits<float>::infinity();
  Clock clock{plan};
  for (int blk = 0; blk < n_blocks; blk++) {
    int op = c.next();
    if (op == MIXER)
      mixer(c, b, k, clock, x.data(), W, conv_in, conv_out, state_in, state_out);
    else if (op == MLP)
      margin = std::fmin(margin, mlp(c, b, k, clock, x.data(), W, one_pos, track != 0));
    else
      throw std::runtime_error("circuit_step: unknown layer record");
  }
  float r = rms_factor(x.data(), W, k.inv_hidden, k.eps);
  float* logits = out[0].data<float>();
  std::vector<float> hn(n_out);
  for (int i = 0; i < n_out; i++) hn[i] = (x[out_pos[i]] * r) * final_norm[i];
  logits_of.apply(hn.data(), logits);
  clock.mark(LOGITS);
  plan.tokens += 1;
  out[3].data<float>()[0] = margin;
  std::copy(x.begin(), x.end(), out[4].data<float>());
}

class CircuitStep : public mx::Primitive {
 public:
  CircuitStep(mx::Stream s, std::shared_ptr<const Plan> plan) : mx::Primitive(s), plan_(std::move(plan)) {}

  void eval_cpu(const std::vector<mx::array>& in, std::vector<mx::array>& out) override {
    for (auto& a : in)
      if (!a.flags().row_contiguous) throw std::invalid_argument("circuit_step: inputs must be contiguous");
    // The recurrent state is by far the largest array: when no other array shares its
    // buffer, the new state is written over the old one (the caller gives it up: see
    // native_step.NativeStep.__call__). MLX's own donation test cannot pass here, since
    // every output of a primitive holds its inputs.
    bool in_place = in[STATE].data_shared_ptr().use_count() == 1 && in[STATE].nbytes() == out[2].nbytes();
    for (size_t i = 0; i < out.size(); i++) {
      if (i == 2 && in_place)
        out[i].copy_shared_buffer(in[STATE]);
      else
        out[i].set_data(mx::allocator::malloc(out[i].nbytes()));
    }
    auto& encoder = mx::cpu::get_command_encoder(stream());
    for (auto& a : in) encoder.set_input_array(a);
    for (auto& o : out) encoder.set_output_array(o);
    // MLX's CPU back end computes asynchronously: the inputs are ready only in stream order
    encoder.dispatch([plan = plan_, ins = in, outs = out]() mutable { run(*plan, ins, outs); });
  }
  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error("circuit_step runs on the CPU stream only");
  }
  const char* name() const override { return "CircuitStep"; }

 private:
  std::shared_ptr<const Plan> plan_;
};

std::shared_ptr<Plan> make_plan(std::vector<int> program, std::vector<float> consts, int blocks, bool profile) {
  if (consts.size() != 8) throw std::invalid_argument("circuit_step: a plan takes 8 constants");
  if (program.size() < 2) throw std::invalid_argument("circuit_step: a program starts with W and V");
  auto p = std::make_shared<Plan>();
  p->V = program[1];  // the program's header: W, V, ...
  p->program = std::move(program);
  p->consts = std::move(consts);
  p->blocks = blocks;
  p->profile = profile;
  return p;
}

std::vector<mx::array> step(const std::shared_ptr<Plan>& plan, const std::vector<mx::array>& inputs) {
  if (inputs.size() != 5) throw std::invalid_argument("circuit_step: inputs are x, conv, state, floats, ints");
  std::vector<mx::array> ins;
  for (size_t i = 0; i < inputs.size(); i++) {
    auto want = i == INTS ? mx::int32 : mx::float32;
    if (inputs[i].dtype() != want) throw std::invalid_argument("circuit_step: an input has the wrong dtype");
    ins.push_back(inputs[i]);  // no per-token copy: eval_cpu checks they are contiguous
  }
  std::vector<mx::Shape> shapes{{1, plan->V}, ins[CONV].shape(), ins[STATE].shape(), {1}, ins[X].shape()};
  std::vector<mx::Dtype> dtypes(shapes.size(), mx::float32);
  auto prim = std::make_shared<CircuitStep>(mx::default_stream(mx::Device::cpu), plan);
  return mx::array::make_arrays(shapes, dtypes, prim, ins);
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
  m.doc() = "One decode token of a compiled circuit as one MLX CPU primitive";
  nb::class_<Plan>(m, "Plan");
  m.def("plan", &make_plan, nb::arg("program"), nb::arg("consts"), nb::arg("blocks") = -1,
        nb::arg("profile") = false);
  // seconds per stage (the Stage order) and tokens run, of a profiling plan
  m.def("profile", [](const std::shared_ptr<Plan>& p) { return std::make_pair(p->seconds, p->tokens); });
  m.attr("STAGES") = std::vector<std::string>{"mixer: norm+projection", "mixer: conv", "mixer: normalize+gates+recurrence+gated norm",
                                              "mixer: out", "mlp: norm+gate", "mlp: activation", "mlp: down", "final norm+logits"};
  m.def("step", &step, nb::arg("plan"), nb::arg("inputs"));
  m.def("math_mismatches", &math_mismatches, nb::arg("stride"));
}
