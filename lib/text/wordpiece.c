/* placeholder */
#include "tokenizer-impl.h"
int tfm_wpm_encode(const struct tfm_tokenizer *t, const char *text, size_t len, struct tfm_ids *out)
{ return tfm_seterr(TFM_E_UNSUPPORTED, "WordPiece: not yet"); }
