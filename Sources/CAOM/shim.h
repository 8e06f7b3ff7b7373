// Shims for libaom (AV1 encoder and decoder; BSD, Debian libaom-dev): its init functions and
// aom_codec_control are macros Swift cannot call.
#ifndef PUBBOT_CAOM_SHIM_H
#define PUBBOT_CAOM_SHIM_H
#include <aom/aom_decoder.h>
#include <aom/aom_encoder.h>
#include <aom/aomcx.h>
#include <aom/aomdx.h>
#include <string.h>

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
/* Temporal layers through libaom's SVC interface (as its examples/svc_encoder_rtc.c): one spatial
   layer, `layers` temporal ones at frame-rate factors 4/2/1, cumulative targets in kbps. */
static inline aom_codec_err_t caom_set_svc_temporal(aom_codec_ctx_t *ctx, int layers, const int *cumulative_kbps, int maxq, int minq) {
    aom_svc_params_t p;
    memset(&p, 0, sizeof p);
    p.number_spatial_layers = 1;
    p.number_temporal_layers = layers;
    p.scaling_factor_num[0] = 1;
    p.scaling_factor_den[0] = 1;
    for (int i = 0; i < layers; i++) {
        p.max_quantizers[i] = maxq;
        p.min_quantizers[i] = minq;
        p.layer_target_bitrate[i] = cumulative_kbps[i];
        p.framerate_factor[i] = 1 << (layers - 1 - i);
    }
    return (aom_codec_control)(ctx, AV1E_SET_SVC_PARAMS, &p);
}
/* One frame's temporal layer and references: LAST reads buffer slot 0, GOLDEN slot 1 (the other
   five names point at slot 0, unused); the frame refreshes slot 0 and/or 1. */
static inline aom_codec_err_t caom_set_svc_frame(aom_codec_ctx_t *ctx, int temporal, int ref_last, int ref_golden, int update_last,
                                                 int update_golden) {
    aom_svc_layer_id_t id;
    memset(&id, 0, sizeof id);
    id.temporal_layer_id = temporal;
    aom_codec_err_t rc = (aom_codec_control)(ctx, AV1E_SET_SVC_LAYER_ID, &id);
    if (rc != AOM_CODEC_OK) return rc;
    aom_svc_ref_frame_config_t c;
    memset(&c, 0, sizeof c);
    c.ref_idx[3] = 1;
    c.reference[0] = ref_last;
    c.reference[3] = ref_golden;
    c.refresh[0] = update_last;
    c.refresh[1] = update_golden;
    return (aom_codec_control)(ctx, AV1E_SET_SVC_REF_FRAME_CONFIG, &c);
}
/* Spatial layers (L2T*_KEY, L3T*_KEY), as libwebrtc's `libaom_av1_encoder.cc` drives them: every
   spatial layer half the size of the one above, the layer-by-layer targets in kbps (spatial s,
   temporal t at s * temporal + t, cumulative over t), frame-rate factors 4/2/1. */
static inline aom_codec_err_t caom_set_svc_spatial(aom_codec_ctx_t *ctx, int spatial, int temporal, const int *kbps, int maxq,
                                                   int minq) {
    aom_svc_params_t p;
    memset(&p, 0, sizeof p);
    p.number_spatial_layers = spatial;
    p.number_temporal_layers = temporal;
    for (int s = 0; s < spatial; s++) {
        p.scaling_factor_num[s] = 1;
        p.scaling_factor_den[s] = 1 << (spatial - 1 - s);
    }
    for (int i = 0; i < spatial * temporal; i++) {
        p.max_quantizers[i] = maxq;
        p.min_quantizers[i] = minq;
        p.layer_target_bitrate[i] = kbps[i];
    }
    for (int t = 0; t < temporal; t++) p.framerate_factor[t] = 1 << (temporal - 1 - t);
    return (aom_codec_control)(ctx, AV1E_SET_SVC_PARAMS, &p);
}
/* One spatial layer's frame of a picture: its layer IDs and references. Layer s keeps its
   temporal chain in slot s (LAST) and slot 3 + s (GOLDEN); on a key picture layer s > 0 reads
   the layer below (slot s - 1, just written) and writes both its slots. */
static inline aom_codec_err_t caom_set_svc_layer_frame(aom_codec_ctx_t *ctx, int spatial, int temporal, int key_picture,
                                                       int ref_last, int ref_golden, int update_last, int update_golden) {
    aom_svc_layer_id_t id;
    memset(&id, 0, sizeof id);
    id.spatial_layer_id = spatial;
    id.temporal_layer_id = temporal;
    aom_codec_err_t rc = (aom_codec_control)(ctx, AV1E_SET_SVC_LAYER_ID, &id);
    if (rc != AOM_CODEC_OK) return rc;
    aom_svc_ref_frame_config_t c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 7; i++) c.ref_idx[i] = spatial;
    c.ref_idx[3] = 3 + spatial;
    if (key_picture) {
        if (spatial > 0) { c.ref_idx[0] = spatial - 1; c.reference[0] = 1; }
        c.refresh[spatial] = 1;
        c.refresh[3 + spatial] = 1;
    } else {
        c.reference[0] = ref_last;
        c.reference[3] = ref_golden;
        c.refresh[spatial] = update_last;
        c.refresh[3 + spatial] = update_golden;
    }
    return (aom_codec_control)(ctx, AV1E_SET_SVC_REF_FRAME_CONFIG, &c);
}
/* The last frame's quantizer index, 0-255: what libwebrtc's AV1 quality scaler reads
   (libaom_av1_encoder.cc, AOME_GET_LAST_QUANTIZER). */
static inline aom_codec_err_t caom_get_last_qindex(aom_codec_ctx_t *ctx, int *q) { return (aom_codec_control)(ctx, AOME_GET_LAST_QUANTIZER, q); }
static inline long caom_flag_force_kf(void) { return AOM_EFLAG_FORCE_KF; }
static inline const aom_codec_cx_pkt_t *caom_get_cx_data(aom_codec_ctx_t *ctx, aom_codec_iter_t *iter) {
    return aom_codec_get_cx_data(ctx, iter);
}
static inline int caom_pkt_is_frame(const aom_codec_cx_pkt_t *p) { return p->kind == AOM_CODEC_CX_FRAME_PKT; }
static inline const void *caom_pkt_buf(const aom_codec_cx_pkt_t *p) { return p->data.frame.buf; }
static inline size_t caom_pkt_size(const aom_codec_cx_pkt_t *p) { return p->data.frame.sz; }
static inline int caom_pkt_is_key(const aom_codec_cx_pkt_t *p) { return (p->data.frame.flags & AOM_FRAME_IS_KEY) != 0; }
#endif
