// libyuv's scaler: libwebrtc scales every frame it adapts or compares with it
// (api/video/i420_buffer.cc ScaleFrom/CropAndScaleFrom: libyuv::I420Scale, kFilterBox).
#include <libyuv/scale.h>
