// Shims for libvpx: every macro and variadic call Swift cannot import, as cvpx_ functions.
#ifndef PUBBOT_CVPX_SHIM_H
#define PUBBOT_CVPX_SHIM_H
#include <string.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_err_t cvpx_enc_config_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t cvpx_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t cvpx_dec_init(vpx_codec_ctx_t *ctx) {
    vpx_codec_dec_cfg_t cfg = {0};
    cfg.threads = 1;
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), &cfg, 0);
}
/* VP9 (draft-ietf-payload-vp9 / RFC 9628 carries it): the same libvpx API, its own interfaces. */
static inline vpx_codec_err_t cvpx_vp9_enc_config_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp9_cx(), cfg, 0);
}
static inline vpx_codec_err_t cvpx_vp9_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp9_cx(), cfg, 0);
}
static inline vpx_codec_err_t cvpx_vp9_dec_init(vpx_codec_ctx_t *ctx) {
    vpx_codec_dec_cfg_t cfg = {0};
    cfg.threads = 1;
    return vpx_codec_dec_init(ctx, vpx_codec_vp9_dx(), &cfg, 0);
}
static inline vpx_codec_err_t cvpx_vp9_set_aq_mode(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP9E_SET_AQ_MODE, v);
}
static inline vpx_codec_err_t cvpx_vp9_set_noise_sensitivity(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP9E_SET_NOISE_SENSITIVITY, v);
}
static inline vpx_codec_err_t cvpx_vp9_set_tile_columns(vpx_codec_ctx_t *ctx, int v) {
    return vpx_codec_control(ctx, VP9E_SET_TILE_COLUMNS, v);
}
static inline vpx_codec_err_t cvpx_vp9_set_frame_parallel(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP9E_SET_FRAME_PARALLEL_DECODING, v);
}

/* VP9 temporal layers go through libvpx's SVC interface (vp8cx.h VP9E_SET_SVC): one spatial
   layer at full scale, the application choosing each frame's temporal layer and references
   (BYPASS), as libvpx's examples/vpx_temporal_svc_encoder.c does. */
static inline vpx_codec_err_t cvpx_vp9_set_svc(vpx_codec_ctx_t *ctx, int spatial_layers, int max_quantizer, int min_quantizer) {
    vpx_codec_err_t rc = vpx_codec_control(ctx, VP9E_SET_SVC, 1);
    if (rc != VPX_CODEC_OK) return rc;
    vpx_svc_extra_cfg_t p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < VPX_MAX_LAYERS; i++) {
        p.max_quantizers[i] = max_quantizer;
        p.min_quantizers[i] = min_quantizer;
        p.scaling_factor_num[i] = 1;
        p.scaling_factor_den[i] = 1;
    }
    for (int s = 0; s < spatial_layers; s++) p.scaling_factor_den[s] = 1 << (spatial_layers - 1 - s);
    p.temporal_layering_mode = VP9E_TEMPORAL_LAYERING_MODE_BYPASS;
    return vpx_codec_control(ctx, VP9E_SET_SVC_PARAMETERS, &p);
}
static inline vpx_codec_err_t cvpx_vp9_set_svc_temporal(vpx_codec_ctx_t *ctx, int max_quantizer, int min_quantizer) {
    return cvpx_vp9_set_svc(ctx, 1, max_quantizer, min_quantizer);
}
static inline vpx_codec_err_t cvpx_vp9_set_layer_id(vpx_codec_ctx_t *ctx, int temporal) {
    vpx_svc_layer_id_t id;
    memset(&id, 0, sizeof id);
    id.spatial_layer_id = 0;
    id.temporal_layer_id = temporal;
    for (int i = 0; i < VPX_SS_MAX_LAYERS; i++) id.temporal_layer_id_per_spatial[i] = temporal;
    return vpx_codec_control(ctx, VP9E_SET_SVC_LAYER_ID, &id);
}
static inline void cvpx_cfg_set_layering(vpx_codec_enc_cfg_t *cfg, int bypass) {
    cfg->ss_number_layers = 1;
    cfg->temporal_layering_mode = bypass ? VP9E_TEMPORAL_LAYERING_MODE_BYPASS : VP9E_TEMPORAL_LAYERING_MODE_NOLAYERING;
}

/* VP9 spatial layers (L2T*_KEY, L3T*_KEY), as libwebrtc's flexible mode drives them
   (`libvpx_vp9_encoder.cc`): SVC on, each spatial layer a scaling factor, temporal layering
   BYPASS (the application sets every frame's references per spatial layer with
   VP9E_SET_SVC_REF_FRAME_CONFIG), inter-layer prediction on key pictures only, and a superframe
   dropped whole or not at all (libwebrtc's full_superframe_drop). */
static inline void cvpx_cfg_set_spatial(vpx_codec_enc_cfg_t *cfg, int spatial_layers) {
    cfg->ss_number_layers = spatial_layers;
    cfg->temporal_layering_mode = VP9E_TEMPORAL_LAYERING_MODE_BYPASS;
}
static inline vpx_codec_err_t cvpx_vp9_set_svc_spatial(vpx_codec_ctx_t *ctx, int spatial_layers, int max_quantizer,
                                                       int min_quantizer, int drop_threshold) {
    vpx_codec_err_t rc = cvpx_vp9_set_svc(ctx, spatial_layers, max_quantizer, min_quantizer);
    if (rc != VPX_CODEC_OK) return rc;
    rc = vpx_codec_control(ctx, VP9E_SET_SVC_INTER_LAYER_PRED, 2 /* INTER_LAYER_PRED_KEY_PIC */);
    if (rc != VPX_CODEC_OK) return rc;
    vpx_svc_frame_drop_t drop;
    memset(&drop, 0, sizeof drop);
    for (int s = 0; s < spatial_layers; s++) drop.framedrop_thresh[s] = drop_threshold;
    drop.framedrop_mode = FULL_SUPERFRAME_DROP;
    /* At most two superframes in a row: libwebrtc's camera SVC setting
       (modules/video_coding/codecs/vp9/libvpx_vp9_encoder.cc, max_consec_drop = 2). Unbounded,
       a start at a 300 kbit/s estimate (a three-layer 720p key picture against a few kbit/s
       per frame) dropped to 2 fps for the 3 s the estimate took to ramp: a freeze Chromium
       counted. */
    drop.max_consec_drop = 2;
    return vpx_codec_control(ctx, VP9E_SET_SVC_FRAME_DROP_LAYER, &drop);
}
/* One picture's references for every spatial layer: layer s keeps its temporal chain in slot s
   (LAST) and slot 3 + s (GOLDEN); on a key picture layer s > 0 reads the layer below (its slot
   s - 1, just written) and writes both its slots. */
static inline vpx_codec_err_t cvpx_vp9_set_spatial_references(vpx_codec_ctx_t *ctx, int spatial_layers, int key_picture,
                                                              int temporal, int ref_last, int ref_golden, int upd_last,
                                                              int upd_golden) {
    vpx_svc_ref_frame_config_t r;
    memset(&r, 0, sizeof r);
    for (int s = 0; s < spatial_layers; s++) {
        r.lst_fb_idx[s] = s;
        r.gld_fb_idx[s] = 3 + s;
        r.alt_fb_idx[s] = 6;
        if (key_picture) {
            if (s > 0) { r.lst_fb_idx[s] = s - 1; r.reference_last[s] = 1; }
            r.update_buffer_slot[s] = (1 << s) | (1 << (3 + s));
        } else {
            r.reference_last[s] = ref_last;
            r.reference_golden[s] = ref_golden;
            r.update_buffer_slot[s] = (upd_last ? 1 << s : 0) | (upd_golden ? 1 << (3 + s) : 0);
        }
    }
    vpx_codec_err_t rc = vpx_codec_control(ctx, VP9E_SET_SVC_REF_FRAME_CONFIG, &r);
    if (rc != VPX_CODEC_OK) return rc;
    return cvpx_vp9_set_layer_id(ctx, temporal);
}

static inline vpx_codec_err_t cvpx_set_cpuused(vpx_codec_ctx_t *ctx, int v) {
    return vpx_codec_control(ctx, VP8E_SET_CPUUSED, v);
}
static inline vpx_codec_err_t cvpx_set_static_threshold(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, v);
}
static inline vpx_codec_err_t cvpx_set_noise_sensitivity(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP8E_SET_NOISE_SENSITIVITY, v);
}
static inline vpx_codec_err_t cvpx_set_max_intra_bitrate_pct(vpx_codec_ctx_t *ctx, unsigned int v) {
    return vpx_codec_control(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, v);
}
static inline vpx_codec_err_t cvpx_set_temporal_layer_id(vpx_codec_ctx_t *ctx, int v) {
    return vpx_codec_control(ctx, VP8E_SET_TEMPORAL_LAYER_ID, v);
}
static inline vpx_codec_err_t cvpx_set_token_partitions(vpx_codec_ctx_t *ctx, int v) {
    return vpx_codec_control(ctx, VP8E_SET_TOKEN_PARTITIONS, (vp8e_token_partitions)v);
}
static inline vpx_codec_err_t cvpx_get_last_quantizer(vpx_codec_ctx_t *ctx, int *q) {
    return vpx_codec_control(ctx, VP8E_GET_LAST_QUANTIZER_64, q);
}
/* The codec's own quantizer index (VP8 0-127, VP9 0-255): what libwebrtc's quality scaler reads
   (libvpx_vp8_encoder.cc and libvpx_vp9_encoder.cc, VP8E_GET_LAST_QUANTIZER). */
static inline vpx_codec_err_t cvpx_get_last_qindex(vpx_codec_ctx_t *ctx, int *q) {
    return vpx_codec_control(ctx, VP8E_GET_LAST_QUANTIZER, q);
}

/* vpx_codec_cx_pkt_t is a tagged union; read it through accessors. */
static inline int cvpx_pkt_is_frame(const vpx_codec_cx_pkt_t *p) { return p->kind == VPX_CODEC_CX_FRAME_PKT; }
static inline const void *cvpx_pkt_buf(const vpx_codec_cx_pkt_t *p) { return p->data.frame.buf; }
static inline size_t cvpx_pkt_size(const vpx_codec_cx_pkt_t *p) { return p->data.frame.sz; }
static inline int cvpx_pkt_is_key(const vpx_codec_cx_pkt_t *p) { return (p->data.frame.flags & VPX_FRAME_IS_KEY) != 0; }

static inline const vpx_codec_cx_pkt_t *cvpx_get_cx_data(vpx_codec_ctx_t *ctx, vpx_codec_iter_t *iter) {
    return vpx_codec_get_cx_data(ctx, iter);
}

/* Reference-buffer flags used by temporal layering (VP8_EFLAG_* are macros). */
static inline long cvpx_flag_force_kf(void) { return VPX_EFLAG_FORCE_KF; }
static inline long cvpx_flag_no_ref_last(void) { return VP8_EFLAG_NO_REF_LAST; }
static inline long cvpx_flag_no_ref_gf(void) { return VP8_EFLAG_NO_REF_GF; }
static inline long cvpx_flag_no_ref_arf(void) { return VP8_EFLAG_NO_REF_ARF; }
static inline long cvpx_flag_no_upd_last(void) { return VP8_EFLAG_NO_UPD_LAST; }
static inline long cvpx_flag_no_upd_gf(void) { return VP8_EFLAG_NO_UPD_GF; }
static inline long cvpx_flag_no_upd_arf(void) { return VP8_EFLAG_NO_UPD_ARF; }
static inline long cvpx_flag_no_upd_entropy(void) { return VP8_EFLAG_NO_UPD_ENTROPY; }
static inline unsigned long cvpx_dl_realtime(void) { return VPX_DL_REALTIME; }
#endif
