/* The CUDA runtime a program's host code links against (qwengpu-mlx run prog.cu).
 *
 * The program runs as a child of the qwengpu-mlx process, which holds the device: the
 * machine's memory and the model that runs each launch. Every call that touches the
 * device is one request on a pipe and one reply (the fds are in QWENGPU_CUDA_FDS,
 * "READ_FD,WRITE_FD"): a request is a u32 opcode, a u32 payload length and the payload;
 * a reply an i32 cudaError_t, a u32 length and its payload. The opcodes and layouts are
 * host/program_protocol.py's; keep the two in step.
 *
 * What needs no device stays here: host<->host copies, the last-error state, events
 * (the host clock: a launch has ended when its call returns), kernel and symbol
 * registration (clang's module constructor tells us each kernel stub's and shadow
 * variable's device name). A kernel fault is sticky, as on a GPU: every later call
 * returns cudaErrorLaunchFailure.
 */
#include "cuda_runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace {

enum Op : uint32_t {
  OP_MALLOC = 1, OP_FREE = 2, OP_WRITE = 3, OP_READ = 4, OP_COPY = 5, OP_MEMSET = 6,
  OP_SYMBOL = 7, OP_PARAMS = 8, OP_LAUNCH = 9, OP_PROPS = 10, OP_SYNC = 11, OP_MEMINFO = 12,
};

/* A device pointer is DEVICE_BASE + the machine's byte address (program_protocol.py's
   DEVICE_BASE): a multiple of 2^32, so its low 32 bits, which the machine's addresses
   are, are the byte address itself. The range is free in a process's address space, and
   managed memory is mapped there, at the same addresses on both sides. */
const uint64_t DEVICE_BASE = 0x200000000ull;

int g_read_fd = -1, g_write_fd = -1;
cudaError_t g_last_error = cudaSuccess;
cudaError_t g_sticky_error = cudaSuccess;
/* Built on first use: clang's module constructor registers kernels before this file's
   own static constructors may have run. */
std::map<const void *, std::string> &kernels() {  // stub -> device (mangled) name
  static auto *m = new std::map<const void *, std::string>;
  return *m;
}
std::map<const void *, std::string> &symbols() {  // host shadow -> device name
  static auto *m = new std::map<const void *, std::string>;
  return *m;
}
std::map<std::string, std::vector<uint32_t>> g_param_sizes;

struct PendingLaunch { dim3 grid, block; size_t shared; };
std::vector<PendingLaunch> g_configs;

[[noreturn]] void lost(const char *what) {
  fprintf(stderr, "qwengpu-mlx cuda runtime: %s (the qwengpu-mlx process is gone)\n", what);
  _exit(125);
}

void connect() {
  if (g_read_fd >= 0) return;
  const char *fds = getenv("QWENGPU_CUDA_FDS");
  if (!fds || sscanf(fds, "%d,%d", &g_read_fd, &g_write_fd) != 2) {
    fprintf(stderr, "qwengpu-mlx cuda runtime: run this program with `qwengpu-mlx run PROGRAM.cu`\n");
    _exit(125);
  }
}

void write_all(const void *data, size_t n) {
  const char *p = (const char *)data;
  while (n > 0) {
    ssize_t k = write(g_write_fd, p, n);
    if (k <= 0) lost("cannot send a request");
    p += k, n -= (size_t)k;
  }
}

void read_all(void *data, size_t n) {
  char *p = (char *)data;
  while (n > 0) {
    ssize_t k = read(g_read_fd, p, n);
    if (k <= 0) lost("no reply");
    p += k, n -= (size_t)k;
  }
}

struct Message {
  std::vector<char> bytes;
  template <class T> Message &put(T v) { return put_bytes(&v, sizeof v); }
  Message &put_bytes(const void *p, size_t n) {
    bytes.insert(bytes.end(), (const char *)p, (const char *)p + n);
    return *this;
  }
  Message &put_text(const std::string &s) { return put<uint32_t>((uint32_t)s.size()).put_bytes(s.data(), s.size()); }
};

/* One request and its reply; the reply's payload goes to `reply`. */
cudaError_t call(Op op, const Message &m, std::vector<char> *reply = nullptr) {
  connect();
  uint32_t head[2] = {op, (uint32_t)m.bytes.size()};
  write_all(head, sizeof head);
  write_all(m.bytes.data(), m.bytes.size());
  int32_t status;
  uint32_t length;
  read_all(&status, 4);
  read_all(&length, 4);
  std::vector<char> payload(length);
  read_all(payload.data(), length);
  if (reply) *reply = std::move(payload);
  return (cudaError_t)status;
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) g_last_error = e;
  if (e == cudaErrorLaunchFailure || e == cudaErrorIllegalAddress || e == cudaErrorLaunchTimeout ||
      e == cudaErrorMisalignedAddress)
    g_sticky_error = e;
  return e;
}

uint64_t device_bytes() {
  static uint64_t total = 0;
  if (!total) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    total = prop.totalGlobalMem;
  }
  return total;
}

bool is_device(const void *p) {
  return (uintptr_t)p >= DEVICE_BASE && (uintptr_t)p < DEVICE_BASE + device_bytes();
}

/* The machine address of a device pointer (anything else becomes an address no allocation
   holds, which the qwengpu-mlx process refuses with cudaErrorInvalidValue). */
uint64_t machine_address(const void *p) { return (uint64_t)(uintptr_t)p - DEVICE_BASE; }
void *device_pointer(uint64_t address) { return (void *)(uintptr_t)(DEVICE_BASE + address); }

/* ---- managed memory: one copy the host reads and writes in place (mapped at the device
   addresses), mirrored to the device around every call that reads or changes it there ---- */
struct ManagedBlock { uint64_t address; size_t size; };
std::vector<ManagedBlock> &managed() {
  static auto *v = new std::vector<ManagedBlock>;
  return *v;
}

bool map_managed_range() {
  static int state = 0;  // 0 not tried, 1 mapped, -1 failed
  if (state == 0) {
    void *want = (void *)(uintptr_t)DEVICE_BASE;
    void *got = mmap(want, device_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                     -1, 0);
    state = got == want ? 1 : -1;
  }
  return state == 1;
}

void push_managed() {
  for (const ManagedBlock &b : managed())
    call(OP_WRITE, Message().put<uint64_t>(b.address).put_bytes(device_pointer(b.address), b.size));
}

void pull_managed() {
  std::vector<char> reply;
  for (const ManagedBlock &b : managed())
    if (call(OP_READ, Message().put<uint64_t>(b.address).put<uint64_t>(b.size), &reply) == cudaSuccess)
      memcpy(device_pointer(b.address), reply.data(), b.size);
}

/* A call that reads device memory (the managed blocks pushed first) and, with `changes`,
   writes it (the managed blocks read back after). */
cudaError_t device_call(Op op, const Message &m, std::vector<char> *reply, bool changes) {
  if (managed().empty()) return call(op, m, reply);
  push_managed();
  cudaError_t e = call(op, m, reply);
  if (changes) pull_managed();
  return e;
}

cudaError_t memcpy_direction(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyDefault)
    kind = (cudaMemcpyKind)((is_device(src) ? 2 : 0) + (is_device(dst) ? 1 : 0));
  if (n == 0) return cudaSuccess;
  std::vector<char> reply;
  switch (kind) {
    case cudaMemcpyHostToHost:
      memmove(dst, src, n);
      return cudaSuccess;
    case cudaMemcpyHostToDevice:
      return device_call(OP_WRITE, Message().put<uint64_t>(machine_address(dst)).put_bytes(src, n), nullptr, true);
    case cudaMemcpyDeviceToHost: {
      cudaError_t e = device_call(OP_READ, Message().put<uint64_t>(machine_address(src)).put<uint64_t>(n), &reply,
                                  false);
      if (e == cudaSuccess) memcpy(dst, reply.data(), n);
      return e;
    }
    case cudaMemcpyDeviceToDevice:
      return device_call(OP_COPY, Message().put<uint64_t>(machine_address(dst)).put<uint64_t>(machine_address(src))
                                      .put<uint64_t>(n), nullptr, true);
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

cudaError_t symbol_address(const void *symbol, uint64_t *address, uint64_t *size) {
  auto it = symbols().find(symbol);
  if (it == symbols().end()) return cudaErrorInvalidSymbol;
  std::vector<char> reply;
  cudaError_t e = call(OP_SYMBOL, Message().put_text(it->second), &reply);
  if (e == cudaSuccess) {
    memcpy(address, reply.data(), 8);
    memcpy(size, reply.data() + 8, 8);
  }
  return e;
}

const std::vector<uint32_t> *param_sizes(const std::string &name, cudaError_t *e) {
  auto it = g_param_sizes.find(name);
  if (it != g_param_sizes.end()) return &it->second;
  std::vector<char> reply;
  *e = call(OP_PARAMS, Message().put_text(name), &reply);
  if (*e != cudaSuccess) return nullptr;
  std::vector<uint32_t> sizes(reply.size() / 4);
  memcpy(sizes.data(), reply.data(), reply.size());
  return &(g_param_sizes[name] = sizes);
}

/* ---- printf in kernels: the records a launch returns, printed at the next synchronizing
   call (the next launch, a synchronize, a blocking copy, the program's exit), as CUDA
   flushes its printf buffer ---- */
std::string &device_output() {
  static auto *s = new std::string;
  return *s;
}

void flush_device_output() {
  std::string &out = device_output();
  if (out.empty()) return;
  fwrite(out.data(), 1, out.size(), stdout);
  fflush(stdout);
  out.clear();
}

/* One printf record: the format with each conversion's argument read from the frame's
   bytes as clang laid them out (each aligned to its size: int 4, long/pointer/double 8). */
std::string format_record(const std::string &fmt, const std::vector<char> &frame) {
  std::string out;
  size_t at = 0;
  auto take = [&](size_t size) -> const char * {
    at = (at + size - 1) / size * size;
    const char *p = at + size <= frame.size() ? frame.data() + at : nullptr;
    at += size;
    return p;
  };
  char buf[512];
  for (size_t i = 0; i < fmt.size(); i++) {
    if (fmt[i] != '%') { out += fmt[i]; continue; }
    size_t j = i + 1;
    if (j < fmt.size() && fmt[j] == '%') { out += '%'; i = j; continue; }
    while (j < fmt.size() && strchr("-+ #0", fmt[j])) j++;
    while (j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9') j++;
    if (j < fmt.size() && fmt[j] == '.') for (j++; j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9'; j++) {}
    int wide = 0;
    for (; j < fmt.size() && strchr("hlLqjzt", fmt[j]); j++) wide += fmt[j] != 'h';
    if (j >= fmt.size()) { out += fmt.substr(i); break; }
    std::string spec = fmt.substr(i, j - i + 1);
    char conv = fmt[j];
    const char *p;
    buf[0] = 0;
    if (strchr("diouxXc", conv)) {
      if (wide) { long long v = 0; if ((p = take(8))) memcpy(&v, p, 8); snprintf(buf, sizeof buf, spec.c_str(), v); }
      else { int v = 0; if ((p = take(4))) memcpy(&v, p, 4); snprintf(buf, sizeof buf, spec.c_str(), v); }
    } else if (strchr("feEgGaA", conv)) {
      double v = 0; if ((p = take(8))) memcpy(&v, p, 8); snprintf(buf, sizeof buf, spec.c_str(), v);
    } else if (conv == 'p') {
      /* a kernel's pointer holds the machine's byte address; the program sees DEVICE_BASE + it */
      uint64_t v = 0; if ((p = take(8))) memcpy(&v, p, 8);
      snprintf(buf, sizeof buf, "%p", (void *)(uintptr_t)(v + DEVICE_BASE));
    } else if (conv == 's') {
      take(8);
      snprintf(buf, sizeof buf, "%s", "(string)");
    } else {
      snprintf(buf, sizeof buf, "%s", spec.c_str());
    }
    out += buf;
    i = j;
  }
  return out;
}

void keep_device_output(const std::vector<char> &reply) {
  if (reply.size() < 4) return;
  static bool registered = false;
  if (!registered) registered = atexit(flush_device_output) == 0;
  size_t at = 0;
  auto u32 = [&]() { uint32_t v = 0; if (at + 4 <= reply.size()) memcpy(&v, reply.data() + at, 4); at += 4; return v; };
  uint32_t count = u32();
  for (uint32_t r = 0; r < count && at < reply.size(); r++) {
    uint32_t length = u32();
    std::string fmt(reply.data() + at, std::min<size_t>(length, reply.size() - at));
    at += length;
    uint32_t words = u32();
    std::vector<char> frame(reply.data() + at, reply.data() + std::min(reply.size(), at + 4 * (size_t)words));
    at += 4 * (size_t)words;
    device_output() += format_record(fmt, frame);
  }
}

double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

}  // namespace

#define GUARD() do { if (g_sticky_error != cudaSuccess) return record(g_sticky_error); } while (0)

extern "C" {

/* ---- registration (clang's module constructor) ---- */
void **__cudaRegisterFatBinary(void *) { static void *handle = nullptr; return &handle; }
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterFunction(void **, const void *stub, char *, const char *device_name, int, void *, void *,
                            void *, void *, int *) {
  kernels()[stub] = device_name;
}
void __cudaRegisterVar(void **, void *shadow, char *, const char *device_name, int, size_t, int, int) {
  symbols()[shadow] = device_name;
}
void __cudaRegisterManagedVar(void **, void *, char *, const char *, size_t, int) {}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, cudaStream_t) {
  g_configs.push_back({grid, block, shared});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream) {
  if (g_configs.empty()) return cudaErrorInvalidConfiguration;
  PendingLaunch c = g_configs.back();
  g_configs.pop_back();
  *grid = c.grid, *block = c.block, *shared = c.shared;
  *(cudaStream_t *)stream = 0;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t) {
  GUARD();
  auto k = kernels().find(func);
  if (k == kernels().end()) return record(cudaErrorInvalidValue);
  cudaError_t e = cudaSuccess;
  const std::vector<uint32_t> *sizes = param_sizes(k->second, &e);
  if (!sizes) return record(e);
  Message m;
  m.put_text(k->second);
  for (unsigned v : {grid.x, grid.y, grid.z, block.x, block.y, block.z}) m.put<uint32_t>(v);
  m.put<uint64_t>(shared);
  for (size_t i = 0; i < sizes->size(); i++) m.put_bytes(args[i], (*sizes)[i]);
  flush_device_output();
  std::vector<char> printed;
  cudaError_t launched = device_call(OP_LAUNCH, m, &printed, true);
  if (launched == cudaSuccess) keep_device_output(printed);
  return record(launched);
}

/* ---- memory ---- */
cudaError_t cudaMalloc(void **ptr, size_t size) {
  GUARD();
  if (!ptr) return record(cudaErrorInvalidValue);
  std::vector<char> reply;
  cudaError_t e = call(OP_MALLOC, Message().put<uint64_t>(size), &reply);
  uint64_t address = 0;
  if (e == cudaSuccess) memcpy(&address, reply.data(), 8);
  *ptr = e == cudaSuccess && size > 0 ? device_pointer(address) : nullptr;
  return record(e);
}
cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int) {
  GUARD();
  if (!ptr) return record(cudaErrorInvalidValue);
  if (!map_managed_range()) return record(cudaErrorNotSupported);
  cudaError_t e = cudaMalloc(ptr, size);
  if (e == cudaSuccess && size > 0) {
    memset(*ptr, 0, size);
    managed().push_back({machine_address(*ptr), size});
  }
  return e;
}
cudaError_t cudaMemPrefetchAsync(const void *, size_t, int, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaMemAdvise(const void *, size_t, int, int) { return cudaSuccess; }
cudaError_t cudaFree(void *ptr) {
  GUARD();
  if (!ptr) return cudaSuccess;
  std::vector<ManagedBlock> &blocks = managed();
  for (size_t i = 0; i < blocks.size(); i++)
    if (blocks[i].address == machine_address(ptr)) blocks.erase(blocks.begin() + i);
  return record(call(OP_FREE, Message().put<uint64_t>(machine_address(ptr))));
}
cudaError_t cudaMallocHost(void **ptr, size_t size) {
  *ptr = malloc(size ? size : 1);
  return *ptr ? cudaSuccess : record(cudaErrorMemoryAllocation);
}
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }
cudaError_t cudaFreeHost(void *ptr) { free(ptr); return cudaSuccess; }
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  flush_device_output();
  GUARD();
  return record(memcpy_direction(dst, src, n, kind));
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemset(void *ptr, int value, size_t n) {
  GUARD();
  return record(device_call(OP_MEMSET, Message().put<uint64_t>(machine_address(ptr)).put<int32_t>(value)
                                           .put<uint64_t>(n), nullptr, true));
}
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t n, cudaStream_t) { return cudaMemset(ptr, value, n); }
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  GUARD();
  std::vector<char> reply;
  cudaError_t e = call(OP_MEMINFO, Message(), &reply);
  if (e != cudaSuccess) return record(e);
  uint64_t v[2];
  memcpy(v, reply.data(), sizeof v);
  *free_bytes = v[0], *total = v[1];
  return cudaSuccess;
}

/* ---- symbols ---- */
/* A copy to or from `symbol`'s bytes [offset, offset + n): the symbol looked up, the range
   and the direction checked as CUDA checks them (`toward` is the direction that writes the
   symbol or reads it), then one memcpy_direction over the symbol's device pointer. */
static cudaError_t symbol_copy(void *dst, const void *src, const void *symbol, size_t n, size_t offset,
                               cudaMemcpyKind kind, cudaMemcpyKind toward, bool to_symbol) {
  uint64_t address, size;
  cudaError_t e = symbol_address(symbol, &address, &size);
  if (e != cudaSuccess) return e;
  if (offset + n > size) return cudaErrorInvalidValue;
  if (kind != toward && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  void *at = device_pointer(address + offset);
  return memcpy_direction(to_symbol ? at : dst, to_symbol ? src : at, n, kind);
}
cudaError_t cudaMemcpyToSymbol__qwengpu(const void *symbol, const void *src, size_t n, size_t offset,
                                        cudaMemcpyKind kind) {
  GUARD();
  return record(symbol_copy(nullptr, src, symbol, n, offset, kind, cudaMemcpyHostToDevice, true));
}
cudaError_t cudaMemcpyFromSymbol__qwengpu(void *dst, const void *symbol, size_t n, size_t offset,
                                          cudaMemcpyKind kind) {
  GUARD();
  return record(symbol_copy(dst, nullptr, symbol, n, offset, kind, cudaMemcpyDeviceToHost, false));
}
cudaError_t cudaGetSymbolAddress__qwengpu(void **ptr, const void *symbol) {
  GUARD();
  uint64_t address, size;
  cudaError_t e = symbol_address(symbol, &address, &size);
  if (e == cudaSuccess) *ptr = device_pointer(address);
  return record(e);
}
cudaError_t cudaGetSymbolSize__qwengpu(size_t *out, const void *symbol) {
  GUARD();
  uint64_t address, size;
  cudaError_t e = symbol_address(symbol, &address, &size);
  if (e == cudaSuccess) *out = size;
  return record(e);
}

/* ---- device and errors ---- */
cudaError_t cudaDeviceSynchronize(void) { flush_device_output(); GUARD(); return record(call(OP_SYNC, Message())); }
cudaError_t cudaThreadSynchronize(void) { return cudaDeviceSynchronize(); }
cudaError_t cudaDeviceReset(void) { flush_device_output(); return cudaSuccess; }
cudaError_t cudaGetLastError(void) {
  cudaError_t e = g_last_error;
  g_last_error = g_sticky_error;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return g_last_error; }
cudaError_t cudaGetDeviceCount(int *count) { *count = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int *device) { *device = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : record(cudaErrorInvalidDevice); }
cudaError_t cudaDriverGetVersion(int *version) { *version = 11000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *version) { *version = 11000; return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (device != 0) return record(cudaErrorInvalidDevice);
  static std::vector<char> cached;
  if (cached.empty()) {
    cudaError_t e = call(OP_PROPS, Message(), &cached);
    if (e != cudaSuccess) return record(e);
  }
  memset(prop, 0, sizeof *prop);
  const char *p = cached.data();
  memcpy(prop->name, p, 64);
  int64_t v[16];
  memcpy(v, p + 64, sizeof v);
  prop->totalGlobalMem = (size_t)v[0];
  prop->sharedMemPerBlock = (size_t)v[1];
  prop->regsPerBlock = (int)v[2];
  prop->warpSize = (int)v[3];
  prop->maxThreadsPerBlock = (int)v[4];
  for (int i = 0; i < 3; i++) prop->maxThreadsDim[i] = (int)v[5 + i], prop->maxGridSize[i] = (int)v[8 + i];
  prop->totalConstMem = (size_t)v[11];
  prop->major = (int)v[12], prop->minor = (int)v[13];
  prop->multiProcessorCount = (int)v[14];
  prop->clockRate = (int)v[15];
  prop->maxThreadsPerMultiProcessor = prop->maxThreadsPerBlock;
  prop->sharedMemPerMultiprocessor = prop->sharedMemPerBlock;
  prop->maxBlocksPerMultiProcessor = 1;
  prop->memPitch = prop->totalGlobalMem;
  prop->unifiedAddressing = 0;
  prop->managedMemory = 1;
  prop->sharedMemPerBlockOptin = prop->sharedMemPerBlock;
  prop->regsPerMultiprocessor = prop->regsPerBlock;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: case cudaDevAttrMaxBlockDimZ:
      *value = p.maxThreadsDim[attr - cudaDevAttrMaxBlockDimX]; break;
    case cudaDevAttrMaxGridDimX: case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ:
      *value = p.maxGridSize[attr - cudaDevAttrMaxGridDimX]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrClockRate: *value = p.clockRate; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrManagedMemory: *value = p.managedMemory; break;
    default: return record(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define NAME(x) case x: return #x;
    NAME(cudaSuccess) NAME(cudaErrorInvalidValue) NAME(cudaErrorMemoryAllocation)
    NAME(cudaErrorInitializationError) NAME(cudaErrorInvalidConfiguration) NAME(cudaErrorInvalidSymbol)
    NAME(cudaErrorInvalidDevicePointer) NAME(cudaErrorInvalidMemcpyDirection) NAME(cudaErrorInvalidDevice)
    NAME(cudaErrorInvalidResourceHandle) NAME(cudaErrorNotReady) NAME(cudaErrorIllegalAddress)
    NAME(cudaErrorLaunchOutOfResources) NAME(cudaErrorLaunchTimeout) NAME(cudaErrorMisalignedAddress)
    NAME(cudaErrorInvalidPc) NAME(cudaErrorLaunchFailure) NAME(cudaErrorNotSupported) NAME(cudaErrorUnknown)
#undef NAME
    default: return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t e) {  // CUDA's own wording
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorInvalidPc: return "invalid program counter";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
  }
}

/* ---- events and streams: launches are synchronous, so the host clock times them ---- */
struct CUevent_st { double ms; bool recorded; };
struct CUstream_st { int unused; };
cudaError_t cudaEventCreate(cudaEvent_t *event) { *event = new CUevent_st{0, false}; return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) { return cudaEventCreate(event); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  if (!event) return record(cudaErrorInvalidResourceHandle);
  event->ms = now_ms(), event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  flush_device_output();
  return event ? cudaSuccess : record(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end) return record(cudaErrorInvalidResourceHandle);
  if (!start->recorded || !end->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = (float)(end->ms - start->ms);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) { delete event; return cudaSuccess; }
cudaError_t cudaStreamCreate(cudaStream_t *stream) { *stream = new CUstream_st{0}; return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t stream) { delete stream; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { flush_device_output(); GUARD(); return cudaSuccess; }

}  // extern "C"
