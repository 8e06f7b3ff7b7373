// Shims for Cisco's openh264 (BSD; Debian libopenh264-dev): its C interface is a table of
// function pointers called as (*enc)->Method(enc, …), which Swift cannot call through directly.
#ifndef PUBBOT_COPENH264_SHIM_H
#define PUBBOT_COPENH264_SHIM_H
#include <stdbool.h>
#include <wels/codec_api.h>
#include <wels/codec_app_def.h>
#include <wels/codec_def.h>

static inline int coh_enc_create(ISVCEncoder **enc) { return WelsCreateSVCEncoder(enc); }
static inline void coh_enc_destroy(ISVCEncoder *enc) {
    (*enc)->Uninitialize(enc);
    WelsDestroySVCEncoder(enc);
}
static inline int coh_enc_default_params(ISVCEncoder *enc, SEncParamExt *p) { return (*enc)->GetDefaultParams(enc, p); }
static inline int coh_enc_initialize(ISVCEncoder *enc, const SEncParamExt *p) { return (*enc)->InitializeExt(enc, p); }
static inline int coh_enc_encode(ISVCEncoder *enc, const SSourcePicture *pic, SFrameBSInfo *info) {
    return (*enc)->EncodeFrame(enc, pic, info);
}
static inline int coh_enc_force_idr(ISVCEncoder *enc) { return (*enc)->ForceIntraFrame(enc, true); }
static inline int coh_enc_set_option(ISVCEncoder *enc, ENCODER_OPTION id, void *value) { return (*enc)->SetOption(enc, id, value); }
static inline int coh_enc_set_bitrate(ISVCEncoder *enc, int bps) {
    SBitrateInfo info;
    info.iLayer = SPATIAL_LAYER_ALL;
    info.iBitrate = bps;
    return (*enc)->SetOption(enc, ENCODER_OPTION_BITRATE, &info);
}
/* The maximum of the whole stream and of its one spatial layer: openh264 refuses a target above
   the layer's own maximum (welsEncoderExt.cpp, ENCODER_OPTION_BITRATE). */
static inline int coh_enc_set_max_bitrate(ISVCEncoder *enc, int bps) {
    SBitrateInfo info;
    info.iLayer = SPATIAL_LAYER_ALL;
    info.iBitrate = bps;
    int rc = (*enc)->SetOption(enc, ENCODER_OPTION_MAX_BITRATE, &info);
    info.iLayer = SPATIAL_LAYER_0;
    return rc | (*enc)->SetOption(enc, ENCODER_OPTION_MAX_BITRATE, &info);
}
static inline int coh_enc_set_frame_rate(ISVCEncoder *enc, float fps) { return (*enc)->SetOption(enc, ENCODER_OPTION_FRAME_RATE, &fps); }
static inline int coh_enc_set_trace_level(ISVCEncoder *enc, int level) { return (*enc)->SetOption(enc, ENCODER_OPTION_TRACE_LEVEL, &level); }

static inline long coh_dec_create(ISVCDecoder **dec) { return WelsCreateDecoder(dec); }
static inline void coh_dec_destroy(ISVCDecoder *dec) {
    (*dec)->Uninitialize(dec);
    WelsDestroyDecoder(dec);
}
static inline long coh_dec_initialize(ISVCDecoder *dec, const SDecodingParam *p) { return (*dec)->Initialize(dec, p); }
static inline long coh_dec_set_trace_level(ISVCDecoder *dec, int level) { return (*dec)->SetOption(dec, DECODER_OPTION_TRACE_LEVEL, &level); }
static inline DECODING_STATE coh_dec_decode(ISVCDecoder *dec, const unsigned char *src, int size, unsigned char **dst, SBufferInfo *info) {
    return (*dec)->DecodeFrameNoDelay(dec, src, size, dst, info);
}
/* SBufferInfo's picture is a union member; read it through accessors. */
static inline int coh_buf_ready(const SBufferInfo *b) { return b->iBufferStatus == 1; }
static inline int coh_buf_width(const SBufferInfo *b) { return b->UsrData.sSystemBuffer.iWidth; }
static inline int coh_buf_height(const SBufferInfo *b) { return b->UsrData.sSystemBuffer.iHeight; }
static inline int coh_buf_luma_stride(const SBufferInfo *b) { return b->UsrData.sSystemBuffer.iStride[0]; }
/* SFrameBSInfo holds a fixed array of 128 layers; read it through accessors. */
static inline int coh_info_layer_count(const SFrameBSInfo *i) { return i->iLayerNum; }
static inline int coh_info_is_idr(const SFrameBSInfo *i) { return i->eFrameType == videoFrameTypeIDR; }
static inline int coh_info_is_skip(const SFrameBSInfo *i) { return i->eFrameType == videoFrameTypeSkip; }
static inline const unsigned char *coh_layer_bytes(const SFrameBSInfo *i, int layer) { return i->sLayerInfo[layer].pBsBuf; }
static inline int coh_layer_size(const SFrameBSInfo *i, int layer) {
    int size = 0;
    for (int n = 0; n < i->sLayerInfo[layer].iNalCount; n++) size += i->sLayerInfo[layer].pNalLengthInByte[n];
    return size;
}
static inline int coh_layer_is_video(const SFrameBSInfo *i, int layer) { return i->sLayerInfo[layer].uiLayerType == VIDEO_CODING_LAYER; }
static inline int coh_layer_temporal_id(const SFrameBSInfo *i, int layer) { return i->sLayerInfo[layer].uiTemporalId; }
#endif
