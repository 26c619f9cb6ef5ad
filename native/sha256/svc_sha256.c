/*
 * svc's SHA-256 addon: SHA-256 with the x86 SHA extensions (SHA-NI), and one pass that feeds the
 * same bytes to two hashes at once.
 *
 * Why: a file written through the FUSE mount is hashed twice, each 1 MiB chunk for its address in
 * the chunk store and the whole content for its etag (both SHA-256, docs/operations.md). OpenSSL
 * (node:crypto) hashes one stream at a time, so the two hashes cost two passes. SHA-256's message
 * schedule depends only on the bytes, not on the state, so the two hashes of the same block can
 * share it, and the two states' rounds, independent of each other, run interleaved: the
 * `sha256rnds2` chain of one hides the latency of the other's. Both hashes of 1 MiB chunks take about
 * two thirds of the time of two OpenSSL passes on the machine svc is developed on (native/README.md).
 *
 * A state is a 112-byte Buffer (struct state below) that JS owns: copying it (Buffer.from) copies
 * the hash, and digest() does not consume it. Everything here is synchronous and keeps no state but
 * the CPU check (the same answer on every thread), so it is safe to call from any thread: the FUSE
 * hasher calls it from its worker.
 *
 * exports:
 *   supported()                 true where the CPU has SHA-NI, SSSE3 and SSE4.1 (else the others throw)
 *   init()                      a new state (SHA-256's initial value, nothing hashed)
 *   update(a, b | null, bytes)  append `bytes` to state `a` and, when given, to state `b` as well
 *   digest(state)               the lowercase hex SHA-256 of what the state was fed
 */
#include <node_api.h>
#include <stdint.h>
#include <string.h>

#define STATE_BYTES 112
#define STATE_MAGIC 0x53484132u /* "SHA2": a buffer that is not a state is refused */

struct state {
  uint32_t h[8];
  uint64_t total;  /* bytes fed */
  uint32_t buflen; /* bytes of buf not yet hashed (< 64) */
  uint32_t magic;
  uint8_t buf[64];
};
_Static_assert(sizeof(struct state) == STATE_BYTES, "state layout");

static const uint32_t IV[8] = {
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

static const uint32_t K[64] __attribute__((aligned(16))) = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

static int cpu_supported(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return 0;
  if (__get_cpuid_max(0, 0) < 7) return 0;
  __cpuid_count(7, 0, a, b, c, d);
  return (b >> 29) & 1; /* CPUID.(EAX=7,ECX=0):EBX.SHA */
}

/* The SHA-NI instructions keep a state as two vectors, ABEF and CDGH. */
SHA_TARGET static inline void unpack(const uint32_t h[8], __m128i *abef, __m128i *cdgh) {
  __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B);
  *abef = _mm_alignr_epi8(dcba, efgh, 8);
  *cdgh = _mm_blend_epi16(efgh, dcba, 0xF0);
}

SHA_TARGET static inline void pack(uint32_t h[8], __m128i abef, __m128i cdgh) {
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

/* Message words 4i..4i+3 of block `p` (big-endian), from the ones before for i >= 4. */
#define SCHEDULE(W, i, p, MASK)                                                                    \
  ((i) < 4 ? _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 16 * (i))), MASK)           \
           : _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(W[(i) - 4], W[(i) - 3]),     \
                                                _mm_alignr_epi8(W[(i) - 1], W[(i) - 2], 4)),      \
                                  W[(i) - 1]))

/* `n` 64-byte blocks at `p` into one state. */
SHA_TARGET static void blocks1(uint32_t h[8], const uint8_t *p, size_t n) {
  const __m128i MASK = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i abef, cdgh;
  unpack(h, &abef, &cdgh);
  for (; n > 0; n--, p += 64) {
    const __m128i abef0 = abef, cdgh0 = cdgh;
    __m128i W[16];
    for (int i = 0; i < 16; i++) {
      W[i] = SCHEDULE(W, i, p, MASK);
      const __m128i m = _mm_add_epi32(W[i], _mm_load_si128((const __m128i *)(K + 4 * i)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
  }
  pack(h, abef, cdgh);
}

/* The same `n` blocks into two states: one message schedule, the two states' rounds interleaved. */
SHA_TARGET static void blocks2(uint32_t ha[8], uint32_t hb[8], const uint8_t *p, size_t n) {
  const __m128i MASK = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i a_abef, a_cdgh, b_abef, b_cdgh;
  unpack(ha, &a_abef, &a_cdgh);
  unpack(hb, &b_abef, &b_cdgh);
  for (; n > 0; n--, p += 64) {
    const __m128i a_abef0 = a_abef, a_cdgh0 = a_cdgh, b_abef0 = b_abef, b_cdgh0 = b_cdgh;
    __m128i W[16];
    for (int i = 0; i < 16; i++) {
      W[i] = SCHEDULE(W, i, p, MASK);
      const __m128i m = _mm_add_epi32(W[i], _mm_load_si128((const __m128i *)(K + 4 * i)));
      const __m128i m2 = _mm_shuffle_epi32(m, 0x0E);
      a_cdgh = _mm_sha256rnds2_epu32(a_cdgh, a_abef, m);
      b_cdgh = _mm_sha256rnds2_epu32(b_cdgh, b_abef, m);
      a_abef = _mm_sha256rnds2_epu32(a_abef, a_cdgh, m2);
      b_abef = _mm_sha256rnds2_epu32(b_abef, b_cdgh, m2);
    }
    a_abef = _mm_add_epi32(a_abef, a_abef0);
    a_cdgh = _mm_add_epi32(a_cdgh, a_cdgh0);
    b_abef = _mm_add_epi32(b_abef, b_abef0);
    b_cdgh = _mm_add_epi32(b_cdgh, b_cdgh0);
  }
  pack(ha, a_abef, a_cdgh);
  pack(hb, b_abef, b_cdgh);
}
#else
static int cpu_supported(void) { return 0; }
static void blocks1(uint32_t h[8], const uint8_t *p, size_t n) { (void)h; (void)p; (void)n; }
static void blocks2(uint32_t ha[8], uint32_t hb[8], const uint8_t *p, size_t n) { (void)ha; (void)hb; (void)p; (void)n; }
#endif

static int supported = -1;

static void feed1(struct state *s, const uint8_t *p, size_t n) {
  if (n == 0) return; /* p may be NULL (an empty or detached array) */
  s->total += n;
  if (s->buflen > 0) {
    size_t take = 64 - s->buflen < n ? 64 - s->buflen : n;
    memcpy(s->buf + s->buflen, p, take);
    s->buflen += (uint32_t)take;
    p += take;
    n -= take;
    if (s->buflen < 64) return;
    blocks1(s->h, s->buf, 1);
    s->buflen = 0;
  }
  blocks1(s->h, p, n / 64);
  memcpy(s->buf, p + n / 64 * 64, n % 64);
  s->buflen = (uint32_t)(n % 64);
}

/* Both states in one pass where both are at a block boundary (the usual case: a chunk starts one). */
static void feed2(struct state *a, struct state *b, const uint8_t *p, size_t n) {
  if (n == 0) return;
  if (a->buflen > 0 || b->buflen > 0) {
    feed1(a, p, n);
    feed1(b, p, n);
    return;
  }
  a->total += n;
  b->total += n;
  blocks2(a->h, b->h, p, n / 64);
  memcpy(a->buf, p + n / 64 * 64, n % 64);
  memcpy(b->buf, p + n / 64 * 64, n % 64);
  a->buflen = b->buflen = (uint32_t)(n % 64);
}

static void finish(struct state s, uint8_t out[32]) {
  uint8_t last[128] = {0};
  memcpy(last, s.buf, s.buflen);
  last[s.buflen] = 0x80;
  const size_t n = s.buflen + 9 <= 64 ? 1 : 2;
  const uint64_t bits = s.total * 8;
  for (int i = 0; i < 8; i++) last[n * 64 - 1 - i] = (uint8_t)(bits >> (8 * i));
  blocks1(s.h, last, n);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(s.h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s.h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s.h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s.h[i];
  }
}

/* ---- Node-API ---- */

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != napi_ok) return NULL;                                                            \
  } while (0)

static napi_value fail(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

static int ready(napi_env env) {
  if (supported < 0) supported = cpu_supported();
  if (!supported) napi_throw_error(env, NULL, "svc_sha256: this CPU has no SHA extensions (check supported() first)");
  return supported;
}

/* The state in `v` (a 112-byte Buffer made by init), copied out: JS may have moved it anywhere. */
static void *state_of(napi_env env, napi_value v, struct state *out) {
  bool is_buffer = false;
  void *data = NULL;
  size_t len = 0;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return NULL;
  if (napi_get_buffer_info(env, v, &data, &len) != napi_ok || len != STATE_BYTES) return NULL;
  memcpy(out, data, STATE_BYTES);
  /* JS can write into it: a state whose buffered length is out of range is refused, not used. */
  return out->magic == STATE_MAGIC && out->buflen < 64 ? data : NULL;
}

/* The bytes of a Buffer or any TypedArray (also on a SharedArrayBuffer). */
static int bytes_of(napi_env env, napi_value v, const uint8_t **p, size_t *n) {
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed) return 0;
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  void *data = NULL;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &type, &length, &data, &ab, &offset) != napi_ok) return 0;
  size_t size = 1;
  switch (type) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: size = 1; break;
    case napi_int16_array: case napi_uint16_array: size = 2; break;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: size = 4; break;
    default: size = 8; break;
  }
  *p = data;
  *n = length * size;
  return 1;
}

static napi_value js_supported(napi_env env, napi_callback_info info) {
  (void)info;
  if (supported < 0) supported = cpu_supported();
  napi_value out;
  CHECK(napi_get_boolean(env, supported == 1, &out));
  return out;
}

static napi_value js_init(napi_env env, napi_callback_info info) {
  (void)info;
  if (!ready(env)) return NULL;
  struct state s = {0};
  memcpy(s.h, IV, sizeof IV);
  s.magic = STATE_MAGIC;
  napi_value out;
  CHECK(napi_create_buffer_copy(env, STATE_BYTES, &s, NULL, &out));
  return out;
}

static napi_value js_update(napi_env env, napi_callback_info info) {
  if (!ready(env)) return NULL;
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) return fail(env, "update(a, b, bytes): three arguments");
  struct state a, b;
  void *at = state_of(env, argv[0], &a);
  if (!at) return fail(env, "update: the first argument is not a state from init()");
  napi_valuetype second;
  CHECK(napi_typeof(env, argv[1], &second));
  void *bt = NULL;
  if (second != napi_null && second != napi_undefined) {
    bt = state_of(env, argv[1], &b);
    if (!bt) return fail(env, "update: the second argument is neither null nor a state from init()");
    if (bt == at) return fail(env, "update: the two states are the same buffer");
  }
  const uint8_t *p;
  size_t n;
  if (!bytes_of(env, argv[2], &p, &n)) return fail(env, "update: the bytes must be a Buffer or a TypedArray");
  if (bt) {
    feed2(&a, &b, p, n);
    memcpy(bt, &b, STATE_BYTES);
  } else {
    feed1(&a, p, n);
  }
  memcpy(at, &a, STATE_BYTES);
  return NULL;
}

static napi_value js_digest(napi_env env, napi_callback_info info) {
  if (!ready(env)) return NULL;
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  struct state s;
  if (argc < 1 || !state_of(env, argv[0], &s)) return fail(env, "digest: the argument is not a state from init()");
  uint8_t sum[32];
  finish(s, sum);
  static const char hex[] = "0123456789abcdef";
  char text[64];
  for (int i = 0; i < 32; i++) {
    text[2 * i] = hex[sum[i] >> 4];
    text[2 * i + 1] = hex[sum[i] & 15];
  }
  napi_value out;
  CHECK(napi_create_string_latin1(env, text, 64, &out));
  return out;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    {"supported", NULL, js_supported, NULL, NULL, NULL, napi_enumerable, NULL},
    {"init", NULL, js_init, NULL, NULL, NULL, napi_enumerable, NULL},
    {"update", NULL, js_update, NULL, NULL, NULL, napi_enumerable, NULL},
    {"digest", NULL, js_digest, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
