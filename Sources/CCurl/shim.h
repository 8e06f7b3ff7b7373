// One HTTP(S) request through libcurl's easy API (curl_easy_setopt is variadic, so Swift cannot
// call it): the response body and raw header lines come back in malloc'd buffers.
#ifndef PUBBOT_CCURL_SHIM_H
#define PUBBOT_CCURL_SHIM_H
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *data; size_t len; size_t cap; } ccurl_buffer;

static size_t ccurl_append(char *ptr, size_t size, size_t n, void *userdata) {
    ccurl_buffer *b = (ccurl_buffer *)userdata;
    size_t add = size * n;
    if (b->len + add + 1 > 1 << 20) return 0; /* 1 MiB is far beyond any SDP: refuse */
    if (b->len + add + 1 > b->cap) {
        size_t cap = (b->len + add + 1) * 2;
        char *d = (char *)realloc(b->data, cap);
        if (d == NULL) return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, add);
    b->len += add;
    b->data[b->len] = 0;
    return add;
}

typedef struct {
    long status;            /* HTTP status of the last response (after redirects) */
    int curl_code;          /* CURLcode */
    char error[CURL_ERROR_SIZE];
    char *effective_url;    /* malloc'd: the URL the last response came from */
    int connected;          /* a connection was established (a timeout after it is not a connect timeout) */
    ccurl_buffer body;
    ccurl_buffer headers;   /* every header line of every response, redirects included */
} ccurl_result;

static inline void ccurl_result_free(ccurl_result *r) {
    free(r->body.data);
    free(r->headers.data);
    free(r->effective_url);
}

/// method: "POST" or "DELETE"; body may be NULL; headers: `count` lines "Name: value".
/// Redirects are followed (307/308 keep the method and body), at most 5.
/// ca_file: the CA certificates (PEM) to verify an https server with (a private CA); NULL: the
/// system's store. ipv4_only: resolve and connect over IPv4 only (`--no-ipv6`).
static inline void ccurl_request(const char *method, const char *url, const char *body, const char *const *headers, int count,
                                 long connect_timeout_ms, long timeout_ms, const char *ca_file, int ipv4_only, ccurl_result *r) {
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    if (c == NULL) { r->curl_code = CURLE_FAILED_INIT; return; }
    struct curl_slist *list = NULL;
    for (int i = 0; i < count; i++) list = curl_slist_append(list, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body != NULL) { curl_easy_setopt(c, CURLOPT_POSTFIELDS, body); curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body)); }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    /* http and https only, for the request and every redirect (an ftp: or file: Location is refused). */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ccurl_append);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ccurl_append);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->error);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pubbot");
    if (ca_file != NULL) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
    if (ipv4_only) curl_easy_setopt(c, CURLOPT_IPRESOLVE, (long)CURL_IPRESOLVE_V4);
    r->curl_code = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_off_t connect_us = 0;
    if (curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us) == CURLE_OK) r->connected = connect_us > 0;
    char *eff = NULL;
    if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff != NULL) r->effective_url = strdup(eff);
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
}

static inline int ccurl_is_timeout(int code) { return code == CURLE_OPERATION_TIMEDOUT; }
static inline int ccurl_is_unsupported_protocol(int code) { return code == CURLE_UNSUPPORTED_PROTOCOL; }
static inline int ccurl_is_unreachable(int code) {
    return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
}
static inline int ccurl_is_tls(int code) {
    return code == CURLE_SSL_CONNECT_ERROR || code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CERTPROBLEM ||
           code == CURLE_SSL_CIPHER || code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_ISSUER_ERROR;
}
#endif
