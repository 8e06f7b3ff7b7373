// Shims for OpenSSL 3 (libcrypto): one-shot HMAC and digests with plain C types, so the Swift
// side never handles an EVP type. DTLS (libssl) comes with the DTLS-SRTP work.
#ifndef PUBBOT_COPENSSL_SHIM_H
#define PUBBOT_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>

/// HMAC-SHA1 (RFC 2104) of data under key into out (20 bytes). Returns 1 on success.
static inline int copenssl_hmac_sha1(const unsigned char *key, int key_len, const unsigned char *data, size_t data_len,
                                     unsigned char *out) {
    unsigned int len = 0;
    return HMAC(EVP_sha1(), key, key_len, data, data_len, out, &len) != NULL && len == 20;
}

/// A message digest by name ("MD5", "SHA1", "SHA256") into out (up to 64 bytes); returns its
/// length, or 0 on failure.
static inline int copenssl_digest(const char *name, const unsigned char *data, size_t data_len, unsigned char *out) {
    const EVP_MD *md = EVP_get_digestbyname(name);
    unsigned int len = 0;
    if (md == NULL || EVP_Digest(data, data_len, out, &len, md, NULL) != 1) return 0;
    return (int)len;
}

/// Constant-time comparison (1 when equal).
static inline int copenssl_equal(const void *a, const void *b, size_t len) { return CRYPTO_memcmp(a, b, len) == 0; }
#endif
