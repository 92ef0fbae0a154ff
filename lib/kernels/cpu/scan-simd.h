/* scan-simd.h: the recurrent mixers' steps (struct tfm_backend's mamba_scan
 * .. mlstm_step), written once over a vector of VW floats and included by
 * scan-avx2.c (8 lanes) and scan-avx512.c (16), which define the vector
 * type vf, the tail mask type vm and the operations below.  Each lane runs
 * the reference's float operations (lib/kernels/ref/scan.c) in the
 * reference's order; one exp per head stays a scalar expf.  GDN, RWKV v5 /
 * v6 and mLSTM need no vector exp and sum within the lane, and multiply
 * and add in two roundings as the reference does: they are bit-identical
 * to it (their mixers are ill-conditioned enough that fused multiply-adds
 * moved the qwen3_next and xlstm fixtures' errors against transformers
 * from 8.4e-5 to 9.7e-5 and 8.9e-6 to 5e-5, the first near its 1e-4 gate).
 * Mamba, Mamba-2, RWKV v4 and v7 fuse multiply-adds and take Cephes' exp
 * (about 1 ulp) for expf on a vector; Mamba-2 and RWKV v7 sum their dot
 * products across the lanes at the end.  Nothing depends on n or on the
 * thread count.
 *
 * The includer defines: VW, vf, vm, SCAN(name) (the function's name),
 * MASK(n) (lanes [0, n) of VW), LD(p), LDM(p, m) (masked: zeros elsewhere),
 * ST(p, v), STM(p, m, v), SET1(x), ZERO(), ADD, SUB, MUL, DIV, FMA(a, b, c)
 * (a b + c), MAX, VEXP(v), HSUM(v). */

/* lanes [j, j + VW) of a row of n: the whole vector or the tail */
#define LDT(p, full, m) ((full) ? LD(p) : LDM(p, m))
#define STT(p, full, m, v) do { if (full) ST(p, v); else STM(p, m, v); } while (0)

/* Mamba: VW channels at a time, each lane a channel, so the sum over the
 * state runs in the lane in the reference's order and nothing is summed
 * across lanes.  A block's A and h are transposed into [d_state][VW] on the
 * stack; d_state above MAMBA_MAX_STATE takes the reference. */
#define MAMBA_MAX_STATE 256
void SCAN(mamba_scan)(float *y, float *h, const float *x, const float *dt, const float *A,
		      const float *D, const float *B, const float *C, int64_t bc_stride,
		      int64_t ld, int64_t n, int64_t d, int64_t N)
{
	if (N > MAMBA_MAX_STATE) {
		tfm_ref_mamba_scan(y, h, x, dt, A, D, B, C, bc_stride, ld, n, d, N);
		return;
	}
	float At[MAMBA_MAX_STATE * VW] __attribute__((aligned(64)));
	float Ht[MAMBA_MAX_STATE * VW] __attribute__((aligned(64)));
	for (int64_t i0 = 0; i0 < d; i0 += VW) {
		int64_t nc = d - i0 < VW ? d - i0 : VW;
		int full = nc == VW;
		vm m = MASK(full ? 0 : nc);
		/* along the rows of A and h (the stores to the stack stride) */
		for (int64_t l = 0; l < VW; l++) {
			const float *a = A + (i0 + l) * N, *hr = h + (i0 + l) * N;
			for (int64_t s = 0; s < N; s++) {
				At[s * VW + l] = l < nc ? a[s] : 0;
				Ht[s * VW + l] = l < nc ? hr[s] : 0;
			}
		}
		vf Dv = LDT(D + i0, full, m);
		for (int64_t t = 0; t < n; t++) {
			vf dv = LDT(dt + t * ld + i0, full, m), xv = LDT(x + t * ld + i0, full, m);
			const float *b = B + t * bc_stride, *c = C + t * bc_stride;
			vf acc = ZERO();
			for (int64_t s = 0; s < N; s++) {
				vf a = VEXP(MUL(dv, LD(At + s * VW)));
				vf u = MUL(MUL(dv, SET1(b[s])), xv);
				vf hv = FMA(a, LD(Ht + s * VW), u);
				ST(Ht + s * VW, hv);
				acc = FMA(hv, SET1(c[s]), acc);
			}
			STT(y + t * ld + i0, full, m, FMA(Dv, xv, acc));
		}
		for (int64_t l = 0; l < nc; l++)
			for (int64_t s = 0; s < N; s++)
				h[(i0 + l) * N + s] = Ht[s * VW + l];
	}
}

/* Mamba-2: along d_state, one row of S per head channel p, its dot with C
 * summed across the lanes at the end. */
void SCAN(mamba2_scan)(float *y, float *S, const float *x, float dt, float A, float D,
		       const float *B, const float *C, int64_t hd, int64_t N)
{
	vf da = SET1(expf(dt * A)), dtv = SET1(dt);
	int64_t nf = N / VW * VW;
	vm m = MASK(N - nf);
	for (int64_t p = 0; p < hd; p++) {
		float *s = S + p * N;
		vf xv = SET1(x[p]), acc = ZERO();
		for (int64_t k = 0; k < N; k += VW) {
			int full = k < nf;
			vf sv = FMA(da, LDT(s + k, full, m), MUL(MUL(dtv, LDT(B + k, full, m)), xv));
			STT(s + k, full, m, sv);
			acc = FMA(sv, LDT(C + k, full, m), acc);
		}
		y[p] = HSUM(acc) + D * x[p];
	}
}

/* Gated DeltaNet: VW value columns at a time, each lane one column j, the
 * sums over the key rows i in the lane in the reference's order (bit-
 * identical to it). */
void SCAN(gdn_step)(float *o, float *S, const float *q, const float *k, const float *v, float g,
		    float beta, int64_t dk, int64_t dv)
{
	vf decay = SET1(expf(g)), bv = SET1(beta);
	int64_t nf = dv / VW * VW;
	vm m = MASK(dv - nf);
	for (int64_t j = 0; j < dv; j += VW) {
		int full = j < nf;
		vf mem = ZERO();
		for (int64_t i = 0; i < dk; i++) {
			vf sv = MUL(LDT(S + i * dv + j, full, m), decay);
			STT(S + i * dv + j, full, m, sv);
			mem = ADD(mem, MUL(sv, SET1(k[i])));
		}
		vf dd = MUL(SUB(LDT(v + j, full, m), mem), bv), acc = ZERO();
		for (int64_t i = 0; i < dk; i++) {
			vf sv = ADD(LDT(S + i * dv + j, full, m), MUL(SET1(k[i]), dd));
			STT(S + i * dv + j, full, m, sv);
			acc = ADD(acc, MUL(sv, SET1(q[i])));
		}
		STT(o + j, full, m, acc);
	}
}

/* RWKV v4: each lane a channel. */
void SCAN(rwkv4_wkv)(float *out, float *num, float *den, float *mx, const float *k,
		     const float *v, const float *w, const float *u, int64_t d)
{
	int64_t nf = d / VW * VW;
	vm m = MASK(d - nf);
	for (int64_t i = 0; i < d; i += VW) {
		int full = i < nf;
		vf p = LDT(mx + i, full, m), kv = LDT(k + i, full, m), vv = LDT(v + i, full, m);
		vf nu = LDT(num + i, full, m), de = LDT(den + i, full, m);
		vf uk = ADD(LDT(u + i, full, m), kv), pw = ADD(p, LDT(w + i, full, m));
		vf q = MAX(p, uk);
		vf e1 = VEXP(SUB(p, q)), e2 = VEXP(SUB(uk, q));
		STT(out + i, full, m, DIV(FMA(e1, nu, MUL(e2, vv)), FMA(e1, de, e2)));
		vf q2 = MAX(pw, kv);
		e1 = VEXP(SUB(pw, q2)), e2 = VEXP(SUB(kv, q2));
		STT(num + i, full, m, FMA(e1, nu, MUL(e2, vv)));
		STT(den + i, full, m, FMA(e1, de, e2));
		STT(mx + i, full, m, q2);
	}
}

/* RWKV v5 / v6: per head, VW value columns j at a time, each lane summing
 * over the key rows i in the reference's order (bit-identical to it). */
void SCAN(rwkv5_wkv)(float *out, float *S, const float *r, const float *k, const float *v,
		     const float *w, const float *u, int64_t n_head, int64_t hs)
{
	int64_t nf = hs / VW * VW;
	vm m = MASK(hs - nf);
	for (int64_t h = 0; h < n_head; h++) {
		const float *rh = r + h * hs, *kh = k + h * hs, *vh = v + h * hs;
		const float *uh = u + h * hs, *wh = w + h * hs;
		float *Sh = S + h * hs * hs;
		for (int64_t j = 0; j < hs; j += VW) {
			int full = j < nf;
			vf vj = LDT(vh + j, full, m), o = ZERO();
			for (int64_t i = 0; i < hs; i++) {
				float *Si = Sh + i * hs + j;
				vf sv = LDT(Si, full, m), kv = MUL(SET1(kh[i]), vj);
				o = ADD(o, MUL(SET1(rh[i]), ADD(MUL(SET1(uh[i]), kv), sv)));
				STT(Si, full, m, ADD(MUL(sv, SET1(wh[i])), kv));
			}
			STT(out + h * hs + j, full, m, o);
		}
	}
}

/* RWKV v7: per head and value row i, along the key columns j; the two
 * dot products (a . S_i, S_i . r) summed across the lanes at the end. */
void SCAN(rwkv7_wkv)(float *out, float *S, const float *r, const float *w, const float *k,
		     const float *v, const float *a, const float *b, int64_t n_head, int64_t hs)
{
	int64_t nf = hs / VW * VW;
	vm m = MASK(hs - nf);
	for (int64_t h = 0; h < n_head; h++) {
		int64_t o = h * hs;
		for (int64_t i = 0; i < hs; i++) {
			float *Si = S + (h * hs + i) * hs;
			vf sa = ZERO(), y = ZERO(), vi = SET1(v[o + i]);
			for (int64_t j = 0; j < hs; j += VW)
				sa = FMA(LDT(a + o + j, j < nf, m), LDT(Si + j, j < nf, m), sa);
			vf sav = SET1(HSUM(sa));
			for (int64_t j = 0; j < hs; j += VW) {
				int full = j < nf;
				vf sv = FMA(LDT(Si + j, full, m), LDT(w + o + j, full, m),
					    MUL(vi, LDT(k + o + j, full, m)));
				sv = FMA(sav, LDT(b + o + j, full, m), sv);
				STT(Si + j, full, m, sv);
				y = FMA(sv, LDT(r + o + j, full, m), y);
			}
			out[o + i] = HSUM(y);
		}
	}
}

/* mLSTM: VW value columns at a time, each lane summing over the key rows
 * in the reference's order; n and q . n are the reference's scalar loop
 * (bit-identical to it). */
void SCAN(mlstm_step)(float *hv, float *C, float *nv, float *m, const float *q, const float *k,
		      const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps)
{
	float fa, ia, m1, scale;
	tfm_k_mlstm_gates(&fa, &ia, &m1, &scale, *m, ig, fg, dqk);
	float qn = 0;
	for (int64_t i = 0; i < dqk; i++) {
		float ik = ia * k[i], qs = q[i] * scale;
		nv[i] = fa * nv[i] + ik;
		qn += qs * nv[i];
	}
	float lo = expf(-m1), den = (fabsf(qn) > lo ? fabsf(qn) : lo) + eps;
	int64_t nf = dv / VW * VW;
	vm mk = MASK(dv - nf);
	vf fav = SET1(fa), dv_ = SET1(den);
	for (int64_t j = 0; j < dv; j += VW) {
		int full = j < nf;
		vf vj = LDT(v + j, full, mk), acc = ZERO();
		for (int64_t i = 0; i < dqk; i++) {
			float *Ci = C + i * dv + j;
			vf cv = ADD(MUL(fav, LDT(Ci, full, mk)), MUL(SET1(ia * k[i]), vj));
			STT(Ci, full, mk, cv);
			acc = ADD(acc, MUL(SET1(q[i] * scale), cv));
		}
		STT(hv + j, full, mk, DIV(acc, dv_));
	}
	*m = m1;
}
