// Shims for OpenSSL 3: one-shot HMAC and digests (libcrypto), and DTLS-SRTP (libssl) over memory
// BIOs, with plain C types so the Swift side handles only opaque pointers.
#ifndef PUBBOT_COPENSSL_SHIM_H
#define PUBBOT_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
#include <openssl/srtp.h>
#include <string.h>
#include <stdio.h>

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

// MARK: DTLS-SRTP (RFC 5764) — a self-signed ECDSA P-256 certificate, a DTLS 1.2 context that
// offers SRTP_AEAD_AES_128_GCM and SRTP_AES128_CM_SHA1_80 and accepts any peer certificate (the
// caller compares its SHA-256 fingerprint with the SDP's), connections over memory BIOs.

static int copenssl_accept_any_certificate(int ok, X509_STORE_CTX *ctx) { (void)ok; (void)ctx; return 1; }

/// A fresh P-256 key and a self-signed certificate for it (CN `cn`, valid 30 days, SHA-256).
static inline int copenssl_make_certificate(const char *cn, EVP_PKEY **out_key, X509 **out_cert) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (key == NULL) return 0;
    X509 *x = X509_new();
    unsigned char serial[8];
    if (x == NULL || RAND_bytes(serial, sizeof serial) != 1) { EVP_PKEY_free(key); X509_free(x); return 0; }
    serial[0] &= 0x7F;
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -86400);
    X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    if (X509_sign(x, key, EVP_sha256()) == 0) { EVP_PKEY_free(key); X509_free(x); return 0; }
    *out_key = key;
    *out_cert = x;
    return 1;
}

/// SHA-256 of the certificate's DER (RFC 8122 fingerprint) into out (32 bytes).
static inline int copenssl_certificate_sha256(const X509 *cert, unsigned char *out) {
    unsigned int n = 0;
    return X509_digest(cert, EVP_sha256(), out, &n) == 1 && n == 32;
}

static inline SSL_CTX *copenssl_dtls_context(EVP_PKEY *key, X509 *cert) {
    SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
    if (ctx == NULL) return NULL;
    SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
    if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") != 0 /* 0 is success */) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, copenssl_accept_any_certificate);
    return ctx;
}

/// The handshake's retransmission timer: 100 ms, doubling up to 60 s (OpenSSL's own starts at
/// 1 s — a ClientHello that reaches a peer before its DTLS is ready then costs a whole second;
/// SRS (srs_app_rtc_dtls.cpp dtls_timer_cb) starts at 50 ms the same way). DTLS_set_timer_cb(3).
static inline unsigned int copenssl_dtls_timer(SSL *ssl, unsigned int previous_us) {
    (void)ssl;
    if (previous_us == 0) return 100000;
    return previous_us >= 30000000 ? 60000000 : previous_us * 2;
}

/// A connection over two memory BIOs; `server` picks the DTLS role. Records are at most `mtu`.
static inline SSL *copenssl_dtls_new(SSL_CTX *ctx, int server, long mtu) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    DTLS_set_link_mtu(ssl, mtu);
    DTLS_set_timer_cb(ssl, copenssl_dtls_timer);
    if (server) SSL_set_accept_state(ssl); else SSL_set_connect_state(ssl);
    return ssl;
}

static inline int copenssl_feed(SSL *ssl, const unsigned char *data, int len) { return BIO_write(SSL_get_rbio(ssl), data, len); }
static inline int copenssl_pending_out(SSL *ssl) { return (int)BIO_ctrl_pending(SSL_get_wbio(ssl)); }
static inline int copenssl_take_out(SSL *ssl, unsigned char *buf, int len) { return BIO_read(SSL_get_wbio(ssl), buf, len); }

/// Drives the handshake: 1 done, 0 in progress, -1 failed (the reason in `reason`).
static inline int copenssl_handshake(SSL *ssl, char *reason, size_t reason_len) {
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl);
    if (rc == 1) return 1;
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    unsigned long code = ERR_get_error();
    if (code != 0) ERR_error_string_n(code, reason, reason_len); else snprintf(reason, reason_len, "SSL error %d", e);
    return -1;
}

/// Reads (and discards) application data after the handshake, so alerts are processed;
/// returns 1 when the peer closed (close_notify), -1 on a fatal error, 0 otherwise.
static inline int copenssl_drain(SSL *ssl) {
    unsigned char buf[2048];
    ERR_clear_error();
    int rc = SSL_read(ssl, buf, sizeof buf);
    if (rc > 0) return 0;
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_ZERO_RETURN) return 1;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    return -1;
}

/// Microseconds until the handshake's retransmission timer fires (-1: no timer running).
static inline long long copenssl_timeout_us(SSL *ssl) {
    struct timeval tv;
    if (DTLSv1_get_timeout(ssl, &tv) != 1) return -1;
    return (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
}
static inline int copenssl_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

/// The negotiated SRTP protection profile id (0 if none).
static inline int copenssl_srtp_profile(SSL *ssl) {
    SRTP_PROTECTION_PROFILE *p = SSL_get_selected_srtp_profile(ssl);
    return p == NULL ? 0 : (int)p->id;
}

/// RFC 5764 §4.2 keying material ("EXTRACTOR-dtls_srtp").
static inline int copenssl_export_srtp(SSL *ssl, unsigned char *out, size_t len) {
    return SSL_export_keying_material(ssl, out, len, "EXTRACTOR-dtls_srtp", 19, NULL, 0, 0);
}

/// The peer certificate's SHA-256 into out (32 bytes); 0 without one.
static inline int copenssl_peer_sha256(SSL *ssl, unsigned char *out) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer == NULL) return 0;
    int ok = copenssl_certificate_sha256(peer, out);
    X509_free(peer);
    return ok;
}

static inline int copenssl_shutdown(SSL *ssl) { return SSL_shutdown(ssl); }

/// A TLS client over memory BIOs (TURN over TLS, RFC 8656 §3.1): TLS 1.2 at least, the server's
/// chain verified against ca_file (the system store when NULL) and its name — or its IP address
/// when host is numeric — against host. NULL on failure, the reason in `reason`.
static inline SSL *copenssl_tls_client(const char *host, const char *ca_file, char *reason, size_t reason_len) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) { snprintf(reason, reason_len, "OpenSSL could not create a TLS context"); return NULL; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
            snprintf(reason, reason_len, "cannot read the CA certificates in '%s'", ca_file);
            SSL_CTX_free(ctx);
            return NULL;
        }
    } else {
        SSL_CTX_set_default_verify_paths(ctx);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL *ssl = SSL_new(ctx);
    SSL_CTX_free(ctx); /* the connection keeps its own reference */
    if (ssl == NULL) { snprintf(reason, reason_len, "OpenSSL could not create a TLS connection"); return NULL; }
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1) {
        SSL_set_tlsext_host_name(ssl, host);
        SSL_set1_host(ssl, host);
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

/// A TLS server context for pubbot's HTTP endpoint (`receive --whip-listen --tls-cert --tls-key`):
/// TLS 1.2 at least, the certificate chain and its private key from PEM files, checked to
/// match; no renegotiation. NULL on failure, the reason in `reason`.
static inline SSL_CTX *copenssl_tls_server_context(const char *cert_file, const char *key_file, char *reason, size_t reason_len) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) { snprintf(reason, reason_len, "OpenSSL could not create a TLS context"); return NULL; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(reason, reason_len, "cannot read a PEM certificate (chain) in '%s'", cert_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(reason, reason_len, "cannot read a PEM private key in '%s'", key_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(reason, reason_len, "the key in '%s' is not the certificate's", key_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/// One server-side TLS connection of `ctx` over memory BIOs (the caller moves the bytes).
static inline SSL *copenssl_tls_server(SSL_CTX *ctx) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
    return ssl;
}

static inline void copenssl_tls_context_free(SSL_CTX *ctx) { SSL_CTX_free(ctx); }
static inline int copenssl_handshake_done(SSL *ssl) { return SSL_is_init_finished(ssl); }

/// Application data read after (or during) the handshake: > 0 bytes, 0 nothing yet, -1 closed
/// or failed.
static inline int copenssl_tls_read(SSL *ssl, unsigned char *buf, int len) {
    ERR_clear_error();
    int rc = SSL_read(ssl, buf, len);
    if (rc > 0) return rc;
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    return -1;
}

static inline int copenssl_tls_write(SSL *ssl, const unsigned char *buf, int len) {
    ERR_clear_error();
    int rc = SSL_write(ssl, buf, len);
    if (rc > 0) return rc;
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    return -1;
}

/// Why the peer's certificate was refused (X509_V_OK = 0 when it was not).
static inline long copenssl_verify_result(SSL *ssl) { return SSL_get_verify_result(ssl); }
static inline const char *copenssl_verify_string(long v) { return X509_verify_cert_error_string(v); }


// MARK: SRTP's ciphers (RFC 3711 AES-CM and HMAC-SHA1, RFC 7714 AES-GCM) — OpenSSL does the
// cryptography; the packet transforms around it are the SRTP module's. One context per key,
// re-initialized per packet with only a new IV (no allocation per packet).

/// An AES-128 context under `key` (16 bytes): mode 0 = CTR (RFC 3711 §4.1.1 AES-CM, 16-byte
/// IV), 1 = GCM sealing, 2 = GCM opening (RFC 7714, 12-byte IV). NULL on failure.
static inline EVP_CIPHER_CTX *copenssl_aes128_new(int mode, const unsigned char *key) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    const EVP_CIPHER *cipher = mode == 0 ? EVP_aes_128_ctr() : EVP_aes_128_gcm();
    if (EVP_CipherInit_ex(ctx, cipher, NULL, key, NULL, mode == 2 ? 0 : 1) != 1) { EVP_CIPHER_CTX_free(ctx); return NULL; }
    return ctx;
}

static inline void copenssl_cipher_free(EVP_CIPHER_CTX *ctx) { EVP_CIPHER_CTX_free(ctx); }

/// XORs `len` bytes at `data` in place with the AES-CTR keystream from the 16-byte `iv`.
static inline int copenssl_ctr_xor(EVP_CIPHER_CTX *ctx, const unsigned char *iv, unsigned char *data, int len) {
    int out = 0;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, 1) != 1) return 0;
    if (len == 0) return 1;
    return EVP_CipherUpdate(ctx, data, &out, data, len) == 1 && out == len;
}

/// AES-GCM: authenticates `aad` ‖ `aad2`, encrypts `len` bytes at `data` in place, writes the
/// 16-byte tag.
static inline int copenssl_gcm_seal(EVP_CIPHER_CTX *ctx, const unsigned char *iv, const unsigned char *aad, int aad_len,
                                    const unsigned char *aad2, int aad2_len, unsigned char *data, int len, unsigned char *tag) {
    int out = 0;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, 1) != 1) return 0;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &out, aad, aad_len) != 1) return 0;
    if (aad2_len > 0 && EVP_CipherUpdate(ctx, NULL, &out, aad2, aad2_len) != 1) return 0;
    if (len > 0 && (EVP_CipherUpdate(ctx, data, &out, data, len) != 1 || out != len)) return 0;
    if (EVP_CipherFinal_ex(ctx, data + len, &out) != 1) return 0;
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
}

/// AES-GCM: decrypts `len` bytes at `data` into `out` and checks the 16-byte tag over `aad` ‖
/// `aad2` and the ciphertext. Returns 1 only when the tag verifies (then `out` holds the plaintext).
static inline int copenssl_gcm_open(EVP_CIPHER_CTX *ctx, const unsigned char *iv, const unsigned char *aad, int aad_len,
                                    const unsigned char *aad2, int aad2_len, const unsigned char *data, int len,
                                    const unsigned char *tag, unsigned char *out) {
    int n = 0;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, 0) != 1) return 0;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &n, aad, aad_len) != 1) return 0;
    if (aad2_len > 0 && EVP_CipherUpdate(ctx, NULL, &n, aad2, aad2_len) != 1) return 0;
    if (len > 0 && (EVP_CipherUpdate(ctx, out, &n, data, len) != 1 || n != len)) return 0;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) != 1) return 0;
    return EVP_CipherFinal_ex(ctx, out + len, &n) == 1;
}

/// An HMAC-SHA1 context keyed once (RFC 2104); NULL on failure.
static inline EVP_MAC_CTX *copenssl_hmac_sha1_new(const unsigned char *key, size_t key_len) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL) return NULL;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (ctx == NULL) return NULL;
    OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA1", 0), OSSL_PARAM_construct_end()};
    if (EVP_MAC_init(ctx, key, key_len, params) != 1) { EVP_MAC_CTX_free(ctx); return NULL; }
    return ctx;
}

static inline void copenssl_hmac_free(EVP_MAC_CTX *ctx) { EVP_MAC_CTX_free(ctx); }

/// HMAC-SHA1 under the context's key of `a` ‖ `b` (b may be empty) into `out` (20 bytes).
static inline int copenssl_hmac_sha1_two(EVP_MAC_CTX *ctx, const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len,
                                         unsigned char *out) {
    size_t n = 0;
    if (EVP_MAC_init(ctx, NULL, 0, NULL) != 1) return 0; /* the same key again */
    if (EVP_MAC_update(ctx, a, a_len) != 1) return 0;
    if (b_len > 0 && EVP_MAC_update(ctx, b, b_len) != 1) return 0;
    return EVP_MAC_final(ctx, out, &n, 20) == 1 && n == 20;
}

/// Compares n bytes in constant time: 0 when equal.
static inline int copenssl_memcmp(const void *a, const void *b, size_t n) { return CRYPTO_memcmp(a, b, n); }

#endif
