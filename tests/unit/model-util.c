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
