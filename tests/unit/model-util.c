/* model-util.c: see model-util.h. */
#include "model-util.h"

void t_base_spec(struct tfm_spec *s)
{
	memset(s, 0, sizeof *s);
	strcpy(s->arch, "test");
	s->n_vocab = 37, s->n_embd = 24, s->n_layer = 2, s->n_ff = 40;
	s->n_head = 4, s->n_head_kv = 2, s->head_dim = 6;
	s->pos_attn = TFM_POS_ROPE, s->rope_theta = 10000, s->rope_interleaved = 1;
	s->norm = TFM_NORM_RMS, s->norm_eps = 1e-5, s->final_norm = 1;
	s->act = TFM_ACT_SILU, s->gated = 1;
	for (int l = 0; l < TFM_MAX_LAYERS; l++)
		s->layer_rope[l] = 1;
	s->bos_id = 1;
}

double t_maxdiff(const float *a, const float *b, int64_t n)
{
	double w = 0;
	for (int64_t i = 0; i < n; i++) {
		double dd = fabs((double)a[i] - b[i]);
		if (dd > w || dd != dd)
			w = dd;
	}
	return w;
}

float *t_read_f32(const char *path, size_t *n)
{
	struct tfm_blob b;
	*n = 0;
	if (tfm_blob_open(&b, path))
		return NULL;
	float *f = malloc(b.size ? b.size : 1);
	if (f)
		memcpy(f, b.data, b.size);
	*n = f ? b.size / 4 : 0;
	tfm_blob_close(&b);
	return f;
}

int t_read_ints(const json_t *a, int32_t *v, int cap)
{
	int n = (int)json_array_size(a);
	for (int i = 0; i < n && i < cap; i++)
		v[i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
	return n;
}
