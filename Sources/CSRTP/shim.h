// Shims for libsrtp2 (2.x API: in-place protect with int lengths).
#ifndef PUBBOT_CSRTP_SHIM_H
#define PUBBOT_CSRTP_SHIM_H
#include <srtp2/srtp.h>
#include <string.h>

/// Builds a one-element policy for all SSRCs of one direction (1 = inbound, 0 = outbound).
/// suite: 0 = AES_CM_128_HMAC_SHA1_80, 1 = AEAD_AES_128_GCM. key points to key||salt.
static inline srtp_err_status_t csrtp_create(srtp_t *session, int suite, int inbound,
                                            const unsigned char *key, int window) {
    srtp_policy_t policy;
    memset(&policy, 0, sizeof(policy));
    if (suite == 1) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
    } else {
        srtp_crypto_policy_set_rtp_default(&policy.rtp);
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp);
    }
    policy.ssrc.type = inbound ? ssrc_any_inbound : ssrc_any_outbound;
    policy.ssrc.value = 0;
    policy.key = (unsigned char *)key;
    policy.window_size = (unsigned long)window;
    policy.allow_repeat_tx = 1; /* retransmissions reuse the original seq with the same bytes */
    policy.next = NULL;
    return srtp_create(session, &policy);
}
static inline int csrtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }
static inline int csrtp_max_srtcp_trailer_len(void) { return SRTP_MAX_TRAILER_LEN + 4; }
#endif
