/* CPU kernels of the fused Llama forward (loopfix/engine/fast/llama_fused.py; built and
 * loaded by loopfix/engine/fast/decode_kernels.py): a prefill of packed prompts, and decode
 * steps of one new token per row.
 *
 * Built for one model shape and dtype on the machine that runs it (-O3 -march=native): HEAD_DIM,
 * GROUP (query heads per key/value head) and ELEM_BF16 (1: bfloat16 tensors, 0: float32).
 * Every value a transformers module would hold in the model's dtype is rounded to it here too
 * (the residual stream, the normalized input before its weight, the rotated queries and keys,
 * the attention weights before they meet the values, the activation before its product);
 * arithmetic between roundings is float32, as torch's CPU kernels do it, so bfloat16 rotary
 * embeddings are transformers' bit for bit. In float32 the compiler may fuse a product and a
 * sum into one rounding (FMA). What is not transformers' order is the attention: a running
 * softmax over blocks of positions, summed in another order than torch's flash kernel.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if HEAD_DIM % 16 == 0
#define LANES 16
#elif HEAD_DIM % 8 == 0
#define LANES 8
#else
#error "HEAD_DIM must be a multiple of 8"
#endif
#define CHUNKS (HEAD_DIM / LANES)
#define BLOCK 64 /* positions whose scores are kept at once */

typedef float vec __attribute__((vector_size(4 * LANES)));
typedef uint32_t uvec __attribute__((vector_size(4 * LANES)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

#if ELEM_BF16
typedef uint16_t elem;
typedef uint16_t hvec __attribute__((vector_size(2 * LANES)));

static inline float to_float(elem x) {
    uint32_t bits = (uint32_t)x << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, as torch converts float32 to bfloat16 (NaN stays NaN). */
static inline elem to_elem(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (elem)((bits >> 16) | 0x40);
    return (elem)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static inline vec load(const elem* p) {
    hvec half;
    memcpy(&half, p, sizeof half);
    uvec bits = __builtin_convertvector(half, uvec) << 16;
    vec f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
#else
typedef float elem;

static inline float to_float(elem x) { return x; }
static inline elem to_elem(float f) { return f; }

static inline vec load(const elem* p) {
    vec f;
    memcpy(&f, p, sizeof f);
    return f;
}
#endif

/* A float32 value as a tensor of the model's dtype holds it. */
static inline float held(float f) { return to_float(to_elem(f)); }

static inline float sum_lanes(vec v) {
#if LANES == 16
    v8 low, high;
    memcpy(&low, &v, 32);
    memcpy(&high, (const char*)&v + 32, 32);
    v8 halves = low + high;
#else
    v8 halves = v;
#endif
    v4 low4, high4;
    memcpy(&low4, &halves, 16);
    memcpy(&high4, (const char*)&halves + 16, 16);
    v4 quarters = low4 + high4;
    return (quarters[0] + quarters[2]) + (quarters[1] + quarters[3]);
}

/* e^x to about 2e-7 relative (Cephes' expf polynomial), branch-free so that loops over it
 * vectorize: libm's expf does not, and the softmax and the activation take one per element.
 * 0 below -87.3 (where float32 underflows; masked scores are -inf), saturating above 88.3. */
static inline float exp_poly(float x) {
    float clamped = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);
    float n = __builtin_rintf(clamped * 1.44269504088896341f);
    float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return x < -87.3f ? 0.0f : p * scale;
}

/* hidden += delta (when delta is not NULL), then out = weight * normalized(hidden) for each of
 * `rows` rows of `width`: the residual add and LlamaRMSNorm (statistics in float32). */
void rms_norm(elem* hidden, const elem* delta, const elem* weight, elem* out, int rows, int width,
              float epsilon, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (rows > 1)
    for (int r = 0; r < rows; r++) {
        elem* h = hidden + (long)r * width;
        if (delta) {
            const elem* d = delta + (long)r * width;
#pragma omp simd
            for (int i = 0; i < width; i++) h[i] = to_elem(to_float(h[i]) + to_float(d[i]));
        }
        float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
        for (int i = 0; i < width; i++) squares += to_float(h[i]) * to_float(h[i]);
        float inverse = 1.0f / sqrtf(squares / (float)width + epsilon);
        elem* o = out + (long)r * width;
#pragma omp simd
        for (int i = 0; i < width; i++)
            o[i] = to_elem(to_float(weight[i]) * held(to_float(h[i]) * inverse));
    }
}

/* out = silu(gate) * up for rows laid out [gate | up], each `width` wide. */
void silu_mul(const elem* gate_up, elem* out, int rows, int width, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (rows > 1)
    for (int r = 0; r < rows; r++) {
        const elem* gate = gate_up + 2L * r * width;
        const elem* up = gate + width;
        elem* o = out + (long)r * width;
#pragma omp simd
        for (int i = 0; i < width; i++) {
            float g = to_float(gate[i]);
            o[i] = to_elem(held(g / (1.0f + exp_poly(-g))) * to_float(up[i]));
        }
    }
}

/* transformers' x * cos + rotate_half(x) * sin, each product and the sum held in the dtype. */
static void rotate(const elem* x, const elem* cos, const elem* sin, elem* out) {
    const int half = HEAD_DIM / 2;
    for (int d = 0; d < HEAD_DIM; d++) {
        float turned = d < half ? -to_float(x[d + half]) : to_float(x[d - half]);
        float straight = held(to_float(x[d]) * to_float(cos[d]));
        out[d] = to_elem(straight + held(turned * to_float(sin[d])));
    }
}

/* A token's GROUP queries for one key/value head: rotated, scaled, in float32. */
static void load_queries(const elem* states, const elem* cos, const elem* sin, float scale,
                         vec query[GROUP][CHUNKS]) {
    for (int g = 0; g < GROUP; g++) {
        elem rotated[HEAD_DIM];
        rotate(states + (long)g * HEAD_DIM, cos, sin, rotated);
        for (int c = 0; c < CHUNKS; c++) query[g][c] = load(rotated + c * LANES) * scale;
    }
}

/* The queries attend over `length` positions of one head's keys and values (HEAD_DIM apart),
 * those where `mask` is NULL or not 0, with a running softmax over blocks of positions.
 * out: GROUP x HEAD_DIM. */
static void attend_group(vec query[GROUP][CHUNKS], const elem* keys, const elem* values,
                         int length, const int64_t* mask, elem* out) {
    vec sum[GROUP][CHUNKS];
    float top[GROUP], total[GROUP];
    for (int g = 0; g < GROUP; g++) {
        for (int c = 0; c < CHUNKS; c++) sum[g][c] = (vec){0};
        top[g] = -INFINITY;
        total[g] = 0.0f;
    }
    for (int start = 0; start < length; start += BLOCK) {
        const int n = length - start < BLOCK ? length - start : BLOCK;
        float weight[GROUP][BLOCK];
        for (int i = 0; i < n; i++) {
            const elem* key = keys + (long)(start + i) * HEAD_DIM;
            vec k[CHUNKS];
            for (int c = 0; c < CHUNKS; c++) k[c] = load(key + c * LANES);
            const int attended = !mask || mask[start + i] != 0;
            for (int g = 0; g < GROUP; g++) {
                vec dot = query[g][0] * k[0];
                for (int c = 1; c < CHUNKS; c++) dot += query[g][c] * k[c];
                weight[g][i] = attended ? sum_lanes(dot) : -INFINITY;
            }
        }
        /* Scores to weights relative to the running maximum; earlier sums rescaled. */
        for (int g = 0; g < GROUP; g++) {
            float best = top[g];
            for (int i = 0; i < n; i++) best = weight[g][i] > best ? weight[g][i] : best;
            if (best == -INFINITY) { /* every position so far is padding */
                for (int i = 0; i < n; i++) weight[g][i] = 0.0f;
                continue;
            }
            const float rescale = exp_poly(top[g] - best);
            float block_total = 0.0f;
#pragma omp simd reduction(+ : block_total)
            for (int i = 0; i < n; i++) {
                weight[g][i] = exp_poly(weight[g][i] - best);
                block_total += weight[g][i];
            }
            total[g] = total[g] * rescale + block_total;
            top[g] = best;
            for (int c = 0; c < CHUNKS; c++) sum[g][c] *= rescale;
        }
        for (int i = 0; i < n; i++) {
            const elem* value = values + (long)(start + i) * HEAD_DIM;
            vec v[CHUNKS];
            for (int c = 0; c < CHUNKS; c++) v[c] = load(value + c * LANES);
            for (int g = 0; g < GROUP; g++) {
                const float w = held(weight[g][i]);
                for (int c = 0; c < CHUNKS; c++) sum[g][c] += w * v[c];
            }
        }
    }
    for (int g = 0; g < GROUP; g++) {
        const float inverse = 1.0f / total[g];
        for (int c = 0; c < CHUNKS; c++) {
            vec o = sum[g][c] * inverse;
            for (int i = 0; i < LANES; i++) out[g * HEAD_DIM + c * LANES + i] = to_elem(o[i]);
        }
    }
}

/* A token's rotated key and its value into one head's cache slot. */
static void append(const elem* token_states, int heads, int kv_heads, int head, const elem* cos,
                   const elem* sin, elem* key_slot, elem* value_slot) {
    rotate(token_states + (long)(heads + head) * HEAD_DIM, cos, sin, key_slot);
    memcpy(value_slot, token_states + (long)(heads + kv_heads + head) * HEAD_DIM,
           HEAD_DIM * sizeof(elem));
}

/* Layouts shared by both entry points: `states` holds each token's projected queries, keys and
 * values ((heads + 2 kv_heads) x HEAD_DIM, in that order), `cos` and `sin` its rotary angles
 * (HEAD_DIM), `out` its attention output (heads x HEAD_DIM). The key and value caches are
 * (rows, kv_heads, positions, HEAD_DIM) buffers sharing `row_stride` and `head_stride`. */

/* One decode step, a token per row: each row's key and value go to `position` of its cache,
 * then its queries attend over positions 0..position where the row's mask is not 0. */
void attend(const elem* states, const elem* cos, const elem* sin, elem* key_cache,
            elem* value_cache, long row_stride, long head_stride, int position,
            const int64_t* mask, long mask_row_stride, float scale, elem* out, int rows,
            int kv_heads, int threads) {
    const int heads = kv_heads * GROUP;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int pair = 0; pair < rows * kv_heads; pair++) {
        const int row = pair / kv_heads, head = pair % kv_heads;
        const elem* token = states + (long)row * (heads + 2 * kv_heads) * HEAD_DIM;
        const elem *row_cos = cos + (long)row * HEAD_DIM, *row_sin = sin + (long)row * HEAD_DIM;
        elem* keys = key_cache + row * row_stride + head * head_stride;
        elem* values = value_cache + row * row_stride + head * head_stride;
        append(token, heads, kv_heads, head, row_cos, row_sin, keys + (long)position * HEAD_DIM,
               values + (long)position * HEAD_DIM);
        vec query[GROUP][CHUNKS];
        load_queries(token + (long)head * GROUP * HEAD_DIM, row_cos, row_sin, scale, query);
        attend_group(query, keys, values, position + 1, mask + row * mask_row_stride,
                     out + ((long)row * heads + (long)head * GROUP) * HEAD_DIM);
    }
}

/* A prefill of `tokens` tokens from several rows, packed one row after another: token j is at
 * `positions[j]` of row `token_rows[j]`, whose `lengths[row]` tokens fill the last positions of
 * its cache (left-padded to `width`). Every key and value is written first; then each token's
 * queries attend over its row's tokens up to itself. */
void prefill_attend(const elem* states, const elem* cos, const elem* sin, elem* key_cache,
                    elem* value_cache, long row_stride, long head_stride, int width,
                    const int64_t* token_rows, const int64_t* positions, const int64_t* lengths,
                    float scale, elem* out, int tokens, int kv_heads, int threads) {
    const int heads = kv_heads * GROUP;
    const long token_stride = (long)(heads + 2 * kv_heads) * HEAD_DIM;
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
        for (long item = 0; item < (long)tokens * kv_heads; item++) {
            const long j = item / kv_heads;
            const int head = (int)(item % kv_heads);
            const long row = token_rows[j];
            const long slot = (width - lengths[row] + positions[j]) * HEAD_DIM;
            const long base = row * row_stride + head * head_stride;
            append(states + j * token_stride, heads, kv_heads, head, cos + j * HEAD_DIM,
                   sin + j * HEAD_DIM, key_cache + base + slot, value_cache + base + slot);
        }
#pragma omp for schedule(static)
        for (long item = 0; item < (long)tokens * kv_heads; item++) {
            const long j = item / kv_heads;
            const int head = (int)(item % kv_heads);
            const long row = token_rows[j];
            const long first = (width - lengths[row]) * HEAD_DIM;
            const long base = row * row_stride + head * head_stride;
            vec query[GROUP][CHUNKS];
            load_queries(states + j * token_stride + (long)head * GROUP * HEAD_DIM,
                         cos + j * HEAD_DIM, sin + j * HEAD_DIM, scale, query);
            attend_group(query, key_cache + base + first, value_cache + base + first,
                         (int)positions[j] + 1, NULL,
                         out + (j * heads + (long)head * GROUP) * HEAD_DIM);
        }
    }
}
