/* rwkvcpp.c: rwkv.cpp's model files (its legacy ggml format): the header
 * int32 magic 'ggmf' (0x67676d66), version (100 or 101), n_vocab, n_embed,
 * n_layer, data type; then tensors, each int32 n_dims (1 to 3), key length,
 * data type, the dims (ggml order, fastest first), the key (the RWKV-LM
 * checkpoint's name) and the data.  FP32 and FP16 tensors are read in
 * place where aligned, else copied; in version 101 files (ggml's block
 * layouts since May 2023, GGUF's) also Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0
 * matrices, dequantized to FP32 here (a checkpoint holds float tensors);
 * older quantizations refused.
 * RWKV v4 and v5 are mapped to tfm's rwkv names with a synthesized
 * transformers RWKV config; the version is told as rwkv.cpp tells it: v5
 * has att.ln_x, v5.2 also att.gate (v5.1: decay and bonus per head, no
 * gate), v7 att.x_rwkvag and att.r_k.  The decay and bonus stay as rwkv.cpp's converter stored them: v4
 * time_decay -exp(w); v5 time_decay exp(-exp(w)), v5.1 time_first exp(u),
 * v5.2 time_faaaa u (v5's [n_head][1][1] or [n_head][head_size][1] made
 * flat: [n_head] or [n_embd]).  v7 (x_rwkvag) as rwkv.cpp stores it, its
 * vectors made flat, its low-rank matrices as Linear weights [out][in].
 * v6 (att.time_maa_x) under llama.cpp's rwkv6 names: the token-shift lerps
 * time_maa_x, _w, _k, _v, _r, _g and the channel mixing's time_maa_k, _r
 * as stored (x + (x_prev - x) maa), time_maa_w1 [5 rank][n_embd] and
 * time_maa_w2 [5][n_embd][rank] (rwkv.cpp's converter transposed both),
 * time_decay raw (w = exp(-exp(time_decay + lora))) and time_faaaa made
 * flat, time_decay_w1, _w2 as Linear weights. */
#include "format/ckpt-impl.h"
#include "quant/dtype.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RWKVCPP_MAGIC 0x67676d66u

int tfm_rwkvcpp_bid(const uint8_t *d, size_t n)
{
	uint32_t magic;
	if (n < 4)
		return 0;
	memcpy(&magic, d, 4);
	return magic == RWKVCPP_MAGIC;
}

/* The GGUF name of an RWKV-LM v4 or v5 key into out; 0 when unknown.  v5's
 * bonus (time_first in v5.1, time_faaaa in v5.2) is time_mix_first either
 * way, as llama.cpp names rwkv6's. */
static int map_name(const char *k, char *out, size_t cap)
{
	static const struct { const char *from, *to; } glob[] = {
		{"emb.weight", "token_embd.weight"}, {"ln_out.weight", "output_norm.weight"},
		{"ln_out.bias", "output_norm.bias"}, {"head.weight", "output.weight"},
		{"blocks.0.ln0.weight", "token_embd_norm.weight"},
		{"blocks.0.ln0.bias", "token_embd_norm.bias"},
	};
	static const struct { const char *from, *to; } blk[] = {
		{"ln1.weight", "attn_norm.weight"}, {"ln1.bias", "attn_norm.bias"},
		{"ln2.weight", "attn_norm_2.weight"}, {"ln2.bias", "attn_norm_2.bias"},
		{"att.time_decay", "time_mix_decay.weight"}, {"att.time_first", "time_mix_first.weight"},
		{"att.time_mix_k", "time_mix_lerp_k.weight"}, {"att.time_mix_v", "time_mix_lerp_v.weight"},
		{"att.time_mix_r", "time_mix_lerp_r.weight"}, {"att.key.weight", "time_mix_key.weight"},
		{"att.value.weight", "time_mix_value.weight"},
		{"att.receptance.weight", "time_mix_receptance.weight"},
		{"att.output.weight", "time_mix_output.weight"},
		{"att.time_faaaa", "time_mix_first.weight"}, {"att.time_mix_g", "time_mix_lerp_g.weight"},
		{"att.gate.weight", "time_mix_gate.weight"}, {"att.ln_x.weight", "time_mix_ln.weight"},
		{"att.ln_x.bias", "time_mix_ln.bias"},
		/* v7 (llama.cpp's rwkv7 names; .weight on the matrices only) */
		{"att.x_rwkvag", "time_mix_lerp_fused.weight"}, {"att.w0", "time_mix_w0.weight"},
		{"att.w1", "time_mix_w1.weight"}, {"att.w2", "time_mix_w2.weight"},
		{"att.a0", "time_mix_a0.weight"}, {"att.a1", "time_mix_a1.weight"},
		{"att.a2", "time_mix_a2.weight"}, {"att.v0", "time_mix_v0.weight"},
		{"att.v1", "time_mix_v1.weight"}, {"att.v2", "time_mix_v2.weight"},
		{"att.g1", "time_mix_g1.weight"}, {"att.g2", "time_mix_g2.weight"},
		/* v6 (llama.cpp's rwkv6 names) */
		{"att.time_maa_x", "time_mix_lerp_x.weight"}, {"att.time_maa_w", "time_mix_lerp_w.weight"},
		{"att.time_maa_k", "time_mix_lerp_k.weight"}, {"att.time_maa_v", "time_mix_lerp_v.weight"},
		{"att.time_maa_r", "time_mix_lerp_r.weight"}, {"att.time_maa_g", "time_mix_lerp_g.weight"},
		{"att.time_maa_w1", "time_mix_w1.weight"}, {"att.time_maa_w2", "time_mix_w2.weight"},
		{"att.time_decay_w1", "time_mix_decay_w1.weight"},
		{"att.time_decay_w2", "time_mix_decay_w2.weight"},
		{"ffn.time_maa_k", "channel_mix_lerp_k.weight"}, {"ffn.time_maa_r", "channel_mix_lerp_r.weight"},
		{"att.k_k", "time_mix_k_k.weight"}, {"att.k_a", "time_mix_k_a.weight"}, {"att.r_k", "time_mix_r_k.weight"},
		{"ffn.x_k", "channel_mix_lerp_k.weight"},
		{"ffn.time_mix_k", "channel_mix_lerp_k.weight"}, {"ffn.time_mix_r", "channel_mix_lerp_r.weight"},
		{"ffn.key.weight", "channel_mix_key.weight"},
		{"ffn.value.weight", "channel_mix_value.weight"},
		{"ffn.receptance.weight", "channel_mix_receptance.weight"},
	};
	for (size_t i = 0; i < sizeof glob / sizeof glob[0]; i++)
		if (!strcmp(k, glob[i].from))
			return snprintf(out, cap, "%s", glob[i].to) < (int)cap;
	unsigned l;
	int pos = 0;
	if (sscanf(k, "blocks.%u.%n", &l, &pos) != 1 || !pos || l > 100000)
		return 0;
	for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++)
		if (!strcmp(k + pos, blk[i].from))
			return snprintf(out, cap, "blk.%u.%s", l, blk[i].to) < (int)cap;
	return 0;
}

/* v7's vectors, stored [1][1][n] (r_k [n_head][head_size]) */
static int v7_vector(const char *name)
{
	static const char *const v[] = {".time_mix_lerp_fused", ".time_mix_w0", ".time_mix_a0",
					".time_mix_v0", ".time_mix_k_k", ".time_mix_k_a",
					".time_mix_r_k", ".channel_mix_lerp_k"};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (strstr(name, v[i]))
			return 1;
	return 0;
}

static const char *type_name(int32_t t)
{
	static const char *const n[] = {"FP32", "FP16", "Q4_0", "Q4_1", "Q4_1_O", "Q4_2", "Q4_3",
					"Q5_0", "Q5_1", "Q8_0"};
	return t >= 0 && t < 10 ? n[t] : "unknown";
}

int tfm_rwkvcpp_parse(struct tfm_ckpt *c, const uint8_t *d, size_t n)
{
	int32_t h[6];
	if (n < sizeof h)
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: truncated header", c->source);
	memcpy(h, d, sizeof h);
	if ((uint32_t)h[0] != RWKVCPP_MAGIC)
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: bad magic", c->source);
	if (h[1] != 100 && h[1] != 101)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: rwkv.cpp file version %d (tfm reads 100 "
				  "and 101)", c->source, h[1]);
	int32_t nv = h[2], ne = h[3], nl = h[4];
	if (nv < 1 || nv > (1 << 24) || ne < 1 || ne > (1 << 16) || nl < 1 || nl > 4096)
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: implausible header (vocab %d, embed "
				  "%d, layers %d)", c->source, nv, ne, nl);
	size_t o = sizeof h;
	int64_t n_ff = 0, n_head = 0;
	int st, ln_x = 0, gate = 0, faaaa = 0, first = 0, v7 = 0, v6 = 0;
	int64_t lora_mix = 0, lora_decay = 0; /* v6's ranks */
	/* v7's ranks: decay (w), in-context learning rate (a), value
	 * residual (v; layers after the first), gate (g) */
	static const char *const lora_key[4] = {"blocks.0.att.w1", "blocks.0.att.a1",
						"blocks.1.att.v1", "blocks.0.att.g1"};
	int64_t lora[4] = {0, 0, 0, 0};
	while (o < n) {
		int32_t th[3], dims[3];
		if (n - o < sizeof th)
			return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: truncated tensor header at "
					  "byte %zu", c->source, o);
		memcpy(th, d + o, sizeof th);
		o += sizeof th;
		if (th[0] < 1 || th[0] > 3 || th[1] < 1 || th[1] > 1024)
			return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: bad tensor header at byte %zu "
					  "(%d dims, key of %d bytes)", c->source, o - sizeof th,
					  th[0], th[1]);
		if (n - o < (size_t)th[0] * 4 + (size_t)th[1])
			return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: truncated tensor header",
					  c->source);
		memcpy(dims, d + o, (size_t)th[0] * 4);
		o += (size_t)th[0] * 4;
		char key[1025];
		memcpy(key, d + o, (size_t)th[1]);
		key[th[1]] = '\0';
		o += (size_t)th[1];
		/* rwkv.cpp's types 0 FP32, 1 FP16, 2 Q4_0, 3 Q4_1, 7 Q5_0, 8
		 * Q5_1, 9 Q8_0 (the quantized ones as ggml's blocks in 101) */
		static const int tmap[10] = {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_Q4_0,
					     TFM_TYPE_Q4_1, -1, -1, -1, TFM_TYPE_Q5_0,
					     TFM_TYPE_Q5_1, TFM_TYPE_Q8_0};
		int type = th[2] >= 0 && th[2] < 10 ? tmap[th[2]] : -1;
		if (type < 0 || (type > 1 && (h[1] != 101 || th[0] != 2 || dims[0] % 32)))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: rwkv.cpp %s tensors (%s) not supported: "
					  "use its FP32, FP16 or a version 101 Q4_0, Q4_1, Q5_0, Q5_1 or "
					  "Q8_0 file", c->source, type_name(th[2]), key);
		int64_t cnt = 1, shape[4];
		for (int i = 0; i < th[0]; i++) {
			if (dims[i] < 1 || dims[i] > (1 << 24))
				return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: %s: bad dimension %d",
						  c->source, key, dims[i]);
			cnt *= dims[i];
			shape[th[0] - 1 - i] = dims[i]; /* torch order: outermost first */
		}
		size_t nb = tfm_type_nbytes(type, cnt);
		if (n - o < nb)
			return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: %s: %zu bytes of data, %zu left "
					  "(truncated?)", c->source, key, nb, n - o);
		char name[128];
		if (!map_name(key, name, sizeof name))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: rwkv.cpp: tensor %s not known (tfm "
					  "reads RWKV v4, v5.1, v5.2, v6 and v7)", c->source, key);
		v6 |= strstr(key, "att.time_maa_x") != NULL;
		if (!strcmp(key, "blocks.0.att.time_maa_w1") && th[0] == 2)
			lora_mix = dims[1] / 5;
		if (!strcmp(key, "blocks.0.att.time_decay_w1") && th[0] == 2)
			lora_decay = dims[1];
		if (strstr(name, ".channel_mix_key.weight") && th[0] == 2)
			n_ff = dims[1];
		ln_x |= strstr(key, "att.ln_x.") != NULL;
		gate |= strstr(key, "att.gate.") != NULL || strstr(key, "att.time_mix_g") != NULL;
		faaaa |= strstr(key, "att.time_faaaa") != NULL;
		first |= strstr(key, "att.time_first") != NULL;
		/* v5's decay and bonus, [n_head][1][1] or [n_head][head_size][1]:
		 * flat, their heads the outermost dimension (rwkv.cpp counts the
		 * heads in blocks.0's decay so) */
		int n_dims = th[0];
		if (th[0] == 3 && (strstr(name, "time_mix_decay") || strstr(name, "time_mix_first"))) {
			if (!strcmp(key, "blocks.0.att.time_decay"))
				n_head = dims[2];
			n_dims = 1;
			shape[0] = cnt;
			/* a bonus per key channel as llama.cpp's rwkv6 has it:
			 * {head_size, n_head} */
			if (strstr(name, "time_mix_first") && dims[0] == 1 && dims[1] > 1) {
				n_dims = 2;
				shape[0] = dims[2], shape[1] = dims[1];
			}
		}
		/* v7's vectors ([1][1][n_embd], r_k [n_head][head_size], the six
		 * lerps [6][1][n_embd]): flat; its low-rank matrices' ranks */
		if (strstr(key, "att.x_rwkvag") || strstr(key, "att.r_k"))
			v7 = 1;
		if (v7_vector(name) && th[0] > 1) {
			if (!strcmp(key, "blocks.0.att.r_k"))
				n_head = dims[1];
			n_dims = 1;
			shape[0] = cnt;
		}
		if (strstr(key, "att.x_rwkvag")) { /* llama.cpp's {n_embd, 1, 1, 6} */
			n_dims = 4;
			shape[0] = cnt / ne, shape[1] = shape[2] = 1, shape[3] = ne;
		}
		for (int i = 0; i < 4 && th[0] == 2; i++)
			if (!strcmp(key, lora_key[i]))
				lora[i] = dims[1];
		/* the keys' lengths leave data at any offset: a tensor that is
		 * not aligned for its elements is copied (read in place it would
		 * be misaligned loads, undefined behaviour; found by fuzzing) */
		const void *src = d + o;
		if (type > TFM_TYPE_F16) {
			float *f = malloc((size_t)cnt * sizeof *f);
			if (!f)
				return tfm_seterr(TFM_E_NOMEM, "%s: rwkv.cpp: %s", c->source, key);
			if ((st = tfm_ckpt_keep_buf(c, f, (size_t)cnt * sizeof *f)))
				return st;
			if ((st = tfm_type_to_f32(type, src, f, cnt)))
				return tfm_adderr(st, "%s: rwkv.cpp: %s", c->source, key);
			if ((st = tfm_ckpt_add_tensor(c, name, TFM_TYPE_F32, n_dims, shape, f,
						      (size_t)cnt * sizeof *f)))
				return st;
			o += nb;
			continue;
		}
		if ((uintptr_t)src % (type ? 2 : 4)) {
			void *cp = malloc(nb);
			if (!cp)
				return tfm_seterr(TFM_E_NOMEM, "%s: rwkv.cpp: %s", c->source, key);
			memcpy(cp, src, nb);
			if ((st = tfm_ckpt_keep_buf(c, cp, nb)))
				return st;
			src = cp;
		}
		if ((st = tfm_ckpt_add_tensor(c, name, type, n_dims,
					      shape, src, nb)))
			return st;
		o += nb;
	}
	if (!n_ff)
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: no ffn.key.weight", c->source);
	/* what rwkv.cpp would not load either: v5.2's tensors without ln_x
	 * (read as v4), or the bonus of the other v5 */
	if (v6 && (v7 || !ln_x || !gate || !faaaa || lora_mix < 1 || lora_decay < 1))
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: RWKV v6 (att.time_maa_x) without its "
				  "ln_x, gate, time_faaaa and low-rank [5 rank][n_embd] "
				  "blocks.0.att.time_maa_w1 and [rank][n_embd] time_decay_w1, or with "
				  "v7's tensors", c->source);
	if (v7 && (gate || faaaa || first))
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: a mix of RWKV v7 and earlier "
				  "tensors", c->source);
	if (!v7 && ((!ln_x && (gate || faaaa)) || (ln_x && (gate ? first : faaaa))))
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: a mix of RWKV versions (att.ln_x %s, "
				  "att.gate %s, att.time_first %s, att.time_faaaa %s)", c->source,
				  ln_x ? "yes" : "no", gate ? "yes" : "no", first ? "yes" : "no",
				  faaaa ? "yes" : "no");
	if ((ln_x || v7) && (n_head < 1 || ne % n_head))
		return tfm_seterr(TFM_E_FORMAT, "%s: rwkv.cpp: RWKV v%d without a %s dividing %d "
				  "channels in heads", c->source, v7 ? 7 : 5,
				  v7 ? "[n_head][head_size] blocks.0.att.r_k"
				     : "[n_head][..][1] blocks.0.att.time_decay", ne);
	/* v7's first layer has no value residual; llama.cpp's rwkv7 loader
	 * still wants its v0, v1, v2 (unused) and its converter writes a0, a1,
	 * a2 under those names: the same here (tfm does not read them) */
	static const char *const av[3][2] = {{"time_mix_a0.weight", "time_mix_v0.weight"},
					      {"time_mix_a1.weight", "time_mix_v1.weight"},
					      {"time_mix_a2.weight", "time_mix_v2.weight"}};
	for (int i = 0; i < 3 && v7; i++) {
		char an[64], vn[64];
		snprintf(an, sizeof an, "blk.0.%s", av[i][0]);
		snprintf(vn, sizeof vn, "blk.0.%s", av[i][1]);
		const struct tfm_ckpt_tensor *a = tfm_ckpt_find(c, an);
		if (!a || tfm_ckpt_find(c, vn))
			continue;
		struct tfm_ckpt_tensor t = *a;
		int64_t shape[4];
		for (int k = 0; k < t.n_dims; k++)
			shape[k] = t.ne[t.n_dims - 1 - k];
		if ((st = tfm_ckpt_add_tensor(c, vn, t.type, t.n_dims, shape, t.data, t.nbytes)))
			return st;
	}
	c->naming = TFM_NAMES_GGUF;
	/* transformers' RwkvConfig; rwkv.cpp's weights are as trained (no
	 * rescaling at inference), time_decay and the bonus as said above */
	c->config = json_pack("{s:s, s:[s], s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:i, s:b}",
			      "model_type", "rwkv", "architectures", "RwkvForCausalLM",
			      "vocab_size", (json_int_t)nv, "hidden_size", (json_int_t)ne,
			      "attention_hidden_size", (json_int_t)ne,
			      "intermediate_size", (json_int_t)n_ff,
			      "num_hidden_layers", (json_int_t)nl, "context_length", (json_int_t)1048576,
			      "layer_norm_epsilon", 1e-5, "rescale_every", 0,
			      "tie_word_embeddings", 0);
	if (!c->config)
		return tfm_seterr(TFM_E_NOMEM, "%s: cannot build the config", c->source);
	/* v5, v7: keys transformers' RwkvConfig (v4) lacks, read by tfm's
	 * rwkv preset; head_size as in the RWKV-5 configs on the Hub */
	if ((ln_x || v7) &&
	    (json_object_set_new(c->config, "rwkv_version", json_integer(v7 ? 7 : v6 ? 6 : 5)) ||
	     json_object_set_new(c->config, "rwkv_version_minor",
				 json_integer(v7 || v6 ? 0 : gate ? 2 : 1)) ||
	     json_object_set_new(c->config, "head_size", json_integer(ne / n_head))))
		return tfm_seterr(TFM_E_NOMEM, "%s: cannot build the config", c->source);
	/* v6's ranks under the names of transformers-style Rwkv6Config */
	if (v6 && (json_object_set_new(c->config, "time_mix_extra_dim", json_integer(lora_mix)) ||
		   json_object_set_new(c->config, "time_decay_extra_dim",
				       json_integer(lora_decay))))
		return tfm_seterr(TFM_E_NOMEM, "%s: cannot build the config", c->source);
	/* v7's ranks under the names of fla's RWKV7Config */
	static const char *const lora_cfg[4] = {"decay_low_rank_dim", "a_low_rank_dim",
						"v_low_rank_dim", "gate_low_rank_dim"};
	for (int i = 0; i < 4 && v7; i++)
		if (json_object_set_new(c->config, lora_cfg[i], json_integer(lora[i])))
			return tfm_seterr(TFM_E_NOMEM, "%s: cannot build the config", c->source);
	return TFM_OK;
}
