// Shims for libaom (AV1 encoder and decoder; BSD, Debian libaom-dev): its init functions and
// aom_codec_control are macros Swift cannot call.
#ifndef PUBBOT_CAOM_SHIM_H
#define PUBBOT_CAOM_SHIM_H
#include <aom/aom_decoder.h>
#include <aom/aom_encoder.h>
#include <aom/aomcx.h>
#include <aom/aomdx.h>

static inline aom_codec_err_t caom_enc_config_default(aom_codec_enc_cfg_t *cfg) {
    return aom_codec_enc_config_default(aom_codec_av1_cx(), cfg, AOM_USAGE_REALTIME);
}
static inline aom_codec_err_t caom_enc_init(aom_codec_ctx_t *ctx, const aom_codec_enc_cfg_t *cfg) {
    return aom_codec_enc_init(ctx, aom_codec_av1_cx(), cfg, 0);
}
static inline aom_codec_err_t caom_dec_init(aom_codec_ctx_t *ctx) {
    aom_codec_dec_cfg_t cfg = {0};
    cfg.threads = 1;
    cfg.allow_lowbitdepth = 1;
    return aom_codec_dec_init(ctx, aom_codec_av1_dx(), &cfg, 0);
}
/* aom_codec_control is variadic behind a type-checking macro: the parenthesised name calls the
   function itself with an int (every control set here takes an int or unsigned int). */
static inline aom_codec_err_t caom_control(aom_codec_ctx_t *ctx, int id, int value) { return (aom_codec_control)(ctx, id, value); }
static inline aom_codec_err_t caom_set_layer_id(aom_codec_ctx_t *ctx, int temporal) {
    aom_svc_layer_id_t id = {0};
    id.spatial_layer_id = 0;
    id.temporal_layer_id = temporal;
    return (aom_codec_control)(ctx, AV1E_SET_SVC_LAYER_ID, &id);
}
static inline long caom_flag_force_kf(void) { return AOM_EFLAG_FORCE_KF; }
static inline const aom_codec_cx_pkt_t *caom_get_cx_data(aom_codec_ctx_t *ctx, aom_codec_iter_t *iter) {
    return aom_codec_get_cx_data(ctx, iter);
}
static inline int caom_pkt_is_frame(const aom_codec_cx_pkt_t *p) { return p->kind == AOM_CODEC_CX_FRAME_PKT; }
static inline const void *caom_pkt_buf(const aom_codec_cx_pkt_t *p) { return p->data.frame.buf; }
static inline size_t caom_pkt_size(const aom_codec_cx_pkt_t *p) { return p->data.frame.sz; }
static inline int caom_pkt_is_key(const aom_codec_cx_pkt_t *p) { return (p->data.frame.flags & AOM_FRAME_IS_KEY) != 0; }
#endif
