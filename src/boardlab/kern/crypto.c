/* crypto: ciphers and hashes as a board runs them, through libcrypto's EVP API (crypto.evp) and through the
 * kernel crypto API over AF_ALG sockets (crypto.afalg), the only way user space reaches a SoC's crypto engine
 * (omap-aes and omap-sham on the AM335x, sun8i-ce on Allwinner, ...).
 *
 * One rep processes `bytes` in calls of `block_bytes`, as `openssl speed` times its block sizes. Every call is
 * one independent message, so that both paths do the same work and produce the same bytes:
 *   AEAD (AES-GCM, ChaCha20-Poly1305): one record as `openssl speed -aead` does it: a fresh IV (set on the
 *     keyed context, never re-created), 13 bytes of associated data shaped like a TLS 1.2 record header,
 *     the payload, final, and the 16-byte tag;
 *   CBC: one message with its own IV, no padding (block_bytes and bytes must be multiples of 16);
 *   hashes: one digest per block.
 * Verification: the standards' known-answer vectors through the same implementation, a decrypt round trip of
 * every benchmarked block (tags checked) or a recomputation of every digest, and a checksum of the output. */
#include "core.h"
#include "crypto_afalg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if BK_HAVE_CRYPTO
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#endif
#if BK_HAVE_AF_ALG
#include <linux/if_alg.h>
#include <sys/socket.h>
#include <sys/uio.h>
#ifndef SOL_ALG
#define SOL_ALG 279 /* include/linux/socket.h; older C libraries do not define it */
#endif
#endif

#define CRYPTO_ANY (BK_HAVE_CRYPTO || BK_HAVE_AF_ALG)

#define TAG_BYTES 16
#define AAD_BYTES 13 /* TLS 1.2 additional_data: seq_num(8) type(1) version(2) length(2); openssl speed -aead */
#define MAX_KEY 32
#define MAX_IV 16
#define MAX_OUT 32 /* longest digest (SHA-256) */
#define KAT_MAX 160 /* longest known-answer message (RFC 8439: 114 bytes) */

#define ALG_CHOICES "aes-128-gcm,aes-256-gcm,aes-128-cbc,chacha20-poly1305,sha1,sha256,md5"

static const bk_param crypto_params[] = {
    {"algorithm", BK_ENUM, 0, 0, "aes-128-gcm", ALG_CHOICES, "",
     "cipher or hash, by OpenSSL's name (the kernel's: gcm(aes), cbc(aes), rfc7539(chacha20,poly1305), sha1, sha256, "
     "md5)"},
    {"block_bytes", BK_INT, 64, 16384, "16384", NULL, "bytes",
     "size of each call, as openssl speed's block sizes: one AEAD record with its own IV, AAD and tag, one CBC "
     "message with its own IV (a multiple of 16), or one digest"},
    {"bytes", BK_INT, 64, 1073741824, "1048576", NULL, "bytes",
     "bytes processed per rep, in block_bytes calls (the last call shorter when block_bytes does not divide it)"},
    {0},
};

static const bk_metric crypto_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6,
     "payload bytes encrypted or hashed per second, MB = 1e6 bytes (openssl speed prints 1000s of bytes per second)"},
    {0},
};

#if CRYPTO_ANY

typedef enum { KIND_AEAD, KIND_CBC, KIND_HASH } crypto_kind;

typedef struct {
    const char *name; /* OpenSSL's name, also the parameter value and the name EVP fetches */
    crypto_kind kind;
    size_t key_len, iv_len;
    size_t out_len; /* digest bytes for a hash, tag bytes for an AEAD */
    const char *kname; /* the kernel crypto API's name */
    const char *ktype; /* the AF_ALG socket type serving it */
    const char *kconfig; /* the kernel options that provide the algorithm */
} crypto_alg;

static const crypto_alg crypto_algs[] = {
    {"aes-128-gcm", KIND_AEAD, 16, 12, TAG_BYTES, "gcm(aes)", "aead", "CONFIG_CRYPTO_GCM with CONFIG_CRYPTO_AES"},
    {"aes-256-gcm", KIND_AEAD, 32, 12, TAG_BYTES, "gcm(aes)", "aead", "CONFIG_CRYPTO_GCM with CONFIG_CRYPTO_AES"},
    {"aes-128-cbc", KIND_CBC, 16, 16, 0, "cbc(aes)", "skcipher", "CONFIG_CRYPTO_CBC with CONFIG_CRYPTO_AES"},
    {"chacha20-poly1305", KIND_AEAD, 32, 12, TAG_BYTES, "rfc7539(chacha20,poly1305)", "aead",
     "CONFIG_CRYPTO_CHACHA20POLY1305"},
    {"sha1", KIND_HASH, 0, 0, 20, "sha1", "hash", "CONFIG_CRYPTO_SHA1"},
    {"sha256", KIND_HASH, 0, 0, 32, "sha256", "hash", "CONFIG_CRYPTO_SHA256"},
    {"md5", KIND_HASH, 0, 0, 16, "md5", "hash", "CONFIG_CRYPTO_MD5"},
};

static const crypto_alg *find_alg(const char *name)
{
    for (size_t i = 0; i < sizeof crypto_algs / sizeof crypto_algs[0]; i++)
        if (strcmp(crypto_algs[i].name, name) == 0)
            return &crypto_algs[i];
    return NULL;
}

/* ---- known answers, from the standards that define each algorithm ---- */

typedef struct {
    const char *alg;
    const char *name;
    const char *key, *iv, *aad; /* hex; NULL when absent */
    const char *msg_hex; /* plaintext or message as hex ... */
    const char *msg_text; /* ... or as text */
    const char *out; /* ciphertext or digest, hex */
    const char *tag; /* AEAD tag, hex */
} crypto_kat;

/* The GCM vectors are McGrew & Viega's test cases ("The Galois/Counter Mode of Operation", revised 2005, the
 * ones NIST's GCM page publishes); CBC is SP 800-38A F.2.1; ChaCha20-Poly1305 is RFC 8439 section 2.8.2;
 * SHA-1/SHA-256 are FIPS 180 (Appendix examples "abc" and the 448-bit two-block message); MD5 is RFC 1321's
 * test suite. */
#define GCM_P60                                                                                                        \
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0d"     \
    "e657ba637b39"
#define GCM_K128 "feffe9928665731c6d6a8f9467308308"
#define GCM_IV "cafebabefacedbaddecaf888"
#define GCM_AAD "feedfacedeadbeeffeedfacedeadbeefabaddad2"
#define SHA_448 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"

static const crypto_kat crypto_kats[] = {
    {"aes-128-gcm", "GCM test case 2", "00000000000000000000000000000000", "000000000000000000000000", NULL,
     "00000000000000000000000000000000", NULL, "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
    {"aes-128-gcm", "GCM test case 3", GCM_K128, GCM_IV, NULL, GCM_P60 "1aafd255", NULL,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aa"
     "c973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {"aes-128-gcm", "GCM test case 4", GCM_K128, GCM_IV, GCM_AAD, GCM_P60, NULL,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aa"
     "c973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {"aes-256-gcm", "GCM test case 14", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", NULL, "00000000000000000000000000000000", NULL, "cea7403d4d606b6e074ec5d3baf39d18",
     "d0d1c8a799996bf0265b98b5d48ab919"},
    {"aes-256-gcm", "GCM test case 15", GCM_K128 GCM_K128, GCM_IV, NULL, GCM_P60 "1aafd255", NULL,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7"
     "a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {"aes-256-gcm", "GCM test case 16", GCM_K128 GCM_K128, GCM_IV, GCM_AAD, GCM_P60, NULL,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7"
     "a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {"aes-128-cbc", "SP 800-38A F.2.1 CBC-AES128", "2b7e151628aed2a6abf7158809cf4f3c",
     "000102030405060708090a0b0c0d0e0f", NULL,
     "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b1"
     "7ad2b417be66c3710",
     NULL,
     "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e222295163ff1caa1681fac0"
     "9120eca307586e1a7",
     NULL},
    {"chacha20-poly1305", "RFC 8439 2.8.2", "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
     "070000004041424344454647", "50515253c0c1c2c3c4c5c6c7", NULL,
     "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be "
     "it.",
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2"
     "905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec6"
     "4b6116",
     "1ae10b594f09e26a7e902ecbd0600691"},
    {"sha1", "FIPS 180 \"abc\"", NULL, NULL, NULL, NULL, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d", NULL},
    {"sha1", "FIPS 180 two-block message", NULL, NULL, NULL, NULL, SHA_448, "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
     NULL},
    {"sha256", "FIPS 180 \"abc\"", NULL, NULL, NULL, NULL, "abc",
     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", NULL},
    {"sha256", "FIPS 180 two-block message", NULL, NULL, NULL, NULL, SHA_448,
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", NULL},
    {"md5", "RFC 1321 \"abc\"", NULL, NULL, NULL, NULL, "abc", "900150983cd24fb0d6963f7d28e17f72", NULL},
    {"md5", "RFC 1321 \"message digest\"", NULL, NULL, NULL, NULL, "message digest", "f96b697d7cb7938d525a2f31aaf161d0",
     NULL},
};

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes lower-case hex into out; returns the byte count (0 for NULL). The tables above are constants, so a
 * malformed entry is a bug: it decodes to a short value and the comparison then fails loudly. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; hex && hex[0] && hex[1] && n < cap; hex += 2) {
        int hi = hexval(hex[0]), lo = hexval(hex[1]);
        if (hi < 0 || lo < 0)
            break;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return n;
}

/* ---- one keyed instance of an algorithm, in libcrypto or in the kernel ---- */

typedef struct crypto_impl crypto_impl;
struct crypto_impl {
    const crypto_alg *alg;
    /* Encrypt one message (ciphertext to out, tag to tag for an AEAD) or digest it (digest to out). */
    int (*enc)(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
               uint8_t *out, uint8_t *tag);
    /* Decrypt one message; -1 when the implementation refuses it (an AEAD tag that does not match). */
    int (*dec)(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
               uint8_t *out, const uint8_t *tag);
    void (*close)(crypto_impl *im);
#if BK_HAVE_CRYPTO
    EVP_CIPHER *cipher;
    EVP_MD *md;
    EVP_CIPHER_CTX *ectx, *dctx; /* one per direction: CBC decryption needs its own key schedule */
    EVP_MD_CTX *mctx;
#endif
    int tfm, op; /* AF_ALG: the bound transform socket and the operation socket accepted from it */
    const char *stage; /* AF_ALG: the step that failed (socket, bind, setkey, authsize, accept) */
    int sys_errno;
    char err[256];
};

typedef int (*impl_opener)(crypto_impl *im, const crypto_alg *a, const uint8_t *key);

static void impl_reset(crypto_impl *im, const crypto_alg *a)
{
    memset(im, 0, sizeof *im);
    im->alg = a;
    im->tfm = im->op = -1;
}

#if BK_HAVE_CRYPTO

static int evp_error(crypto_impl *im, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[160] = "no error queued";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(im->err, sizeof im->err, "libcrypto %s failed: %s", what, buf);
    return -1;
}

static int evp_enc(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                   size_t len, uint8_t *out, uint8_t *tag)
{
    if (im->alg->kind == KIND_HASH) {
        unsigned int dl = 0;
        /* NULL type: re-initialise with the digest already set, without another fetch. */
        if (EVP_DigestInit_ex2(im->mctx, NULL, NULL) != 1 || EVP_DigestUpdate(im->mctx, in, len) != 1 ||
            EVP_DigestFinal_ex(im->mctx, out, &dl) != 1)
            return evp_error(im, "digest");
        if (dl != im->alg->out_len) {
            snprintf(im->err, sizeof im->err, "digest of %u bytes, expected %zu", dl, im->alg->out_len);
            return -1;
        }
        return 0;
    }
    int outl = 0, fin = 0;
    /* Only the IV changes: the key schedule set at open is kept, as a TLS stack keeps it per connection. */
    if (EVP_EncryptInit_ex(im->ectx, NULL, NULL, NULL, iv) != 1)
        return evp_error(im, "set IV");
    if (aad_len && EVP_EncryptUpdate(im->ectx, NULL, &outl, aad, (int)aad_len) != 1)
        return evp_error(im, "AAD update");
    if (EVP_EncryptUpdate(im->ectx, out, &outl, in, (int)len) != 1)
        return evp_error(im, "encrypt update");
    if (EVP_EncryptFinal_ex(im->ectx, out + outl, &fin) != 1)
        return evp_error(im, "encrypt final");
    if ((size_t)outl + (size_t)fin != len) {
        snprintf(im->err, sizeof im->err, "encryption produced %d bytes for %zu", outl + fin, len);
        return -1;
    }
    if (im->alg->kind == KIND_AEAD && EVP_CIPHER_CTX_ctrl(im->ectx, EVP_CTRL_AEAD_GET_TAG, TAG_BYTES, tag) != 1)
        return evp_error(im, "get tag");
    return 0;
}

static int evp_dec(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                   size_t len, uint8_t *out, const uint8_t *tag)
{
    int outl = 0, fin = 0;
    uint8_t t[TAG_BYTES];
    if (EVP_DecryptInit_ex(im->dctx, NULL, NULL, NULL, iv) != 1)
        return evp_error(im, "set IV");
    if (im->alg->kind == KIND_AEAD) {
        memcpy(t, tag, TAG_BYTES);
        if (EVP_CIPHER_CTX_ctrl(im->dctx, EVP_CTRL_AEAD_SET_TAG, TAG_BYTES, t) != 1)
            return evp_error(im, "set tag");
    }
    if (aad_len && EVP_DecryptUpdate(im->dctx, NULL, &outl, aad, (int)aad_len) != 1)
        return evp_error(im, "AAD update");
    if (EVP_DecryptUpdate(im->dctx, out, &outl, in, (int)len) != 1)
        return evp_error(im, "decrypt update");
    if (EVP_DecryptFinal_ex(im->dctx, out + outl, &fin) != 1) {
        ERR_clear_error();
        snprintf(im->err, sizeof im->err, "libcrypto refused the message (%s)",
                 im->alg->kind == KIND_AEAD ? "the tag does not authenticate it" : "decrypt final failed");
        return -1;
    }
    if ((size_t)outl + (size_t)fin != len) {
        snprintf(im->err, sizeof im->err, "decryption produced %d bytes for %zu", outl + fin, len);
        return -1;
    }
    return 0;
}

static void evp_close(crypto_impl *im)
{
    EVP_CIPHER_CTX_free(im->ectx);
    EVP_CIPHER_CTX_free(im->dctx);
    EVP_MD_CTX_free(im->mctx);
    EVP_CIPHER_free(im->cipher);
    EVP_MD_free(im->md);
    im->ectx = im->dctx = NULL;
    im->mctx = NULL;
    im->cipher = NULL;
    im->md = NULL;
}

static int evp_open(crypto_impl *im, const crypto_alg *a, const uint8_t *key)
{
    impl_reset(im, a);
    im->enc = evp_enc;
    im->dec = evp_dec;
    im->close = evp_close;
    if (a->kind == KIND_HASH) {
        /* An explicit fetch once, rather than an implicit one inside every init. */
        im->md = EVP_MD_fetch(NULL, a->name, NULL);
        im->mctx = EVP_MD_CTX_new();
        if (!im->md || !im->mctx || EVP_DigestInit_ex2(im->mctx, im->md, NULL) != 1) {
            evp_error(im, "digest fetch");
            evp_close(im);
            return -1;
        }
        return 0;
    }
    im->cipher = EVP_CIPHER_fetch(NULL, a->name, NULL);
    im->ectx = EVP_CIPHER_CTX_new();
    im->dctx = EVP_CIPHER_CTX_new();
    if (!im->cipher || !im->ectx || !im->dctx || EVP_EncryptInit_ex2(im->ectx, im->cipher, key, NULL, NULL) != 1 ||
        EVP_DecryptInit_ex2(im->dctx, im->cipher, key, NULL, NULL) != 1) {
        evp_error(im, "cipher fetch or key setup");
        evp_close(im);
        return -1;
    }
    if ((size_t)EVP_CIPHER_get_key_length(im->cipher) != a->key_len ||
        (size_t)EVP_CIPHER_get_iv_length(im->cipher) != a->iv_len) {
        snprintf(im->err, sizeof im->err, "libcrypto's %s has a %d-byte key and %d-byte IV, expected %zu and %zu",
                 a->name, EVP_CIPHER_get_key_length(im->cipher), EVP_CIPHER_get_iv_length(im->cipher), a->key_len,
                 a->iv_len);
        evp_close(im);
        return -1;
    }
    if (a->kind == KIND_CBC) {
        /* Whole blocks only: padding would add a block per message and break the equal-bytes comparison. */
        EVP_CIPHER_CTX_set_padding(im->ectx, 0);
        EVP_CIPHER_CTX_set_padding(im->dctx, 0);
    }
    return 0;
}

#endif /* BK_HAVE_CRYPTO */

#if BK_HAVE_AF_ALG

static int afalg_error(crypto_impl *im, const char *what)
{
    im->sys_errno = errno;
    snprintf(im->err, sizeof im->err, "AF_ALG %s: %s", what, strerror(errno));
    return -1;
}

/* The control messages of one cipher operation: direction, IV, and (AEAD) the associated data length. */
typedef union {
    char buf[CMSG_SPACE(sizeof(uint32_t)) * 2 + CMSG_SPACE(sizeof(struct af_alg_iv) + MAX_IV)];
    struct cmsghdr align;
} afalg_cbuf;

static void afalg_controls(const crypto_impl *im, struct msghdr *msg, afalg_cbuf *cb, uint32_t op, const uint8_t *iv,
                           size_t aad_len)
{
    bool aead = im->alg->kind == KIND_AEAD;
    size_t ivlen = im->alg->iv_len;
    memset(cb, 0, sizeof *cb);
    msg->msg_control = cb->buf;
    msg->msg_controllen = CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct af_alg_iv) + ivlen) +
                          (aead ? CMSG_SPACE(sizeof(uint32_t)) : 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(msg);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_OP;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    memcpy(CMSG_DATA(c), &op, sizeof op);
    c = CMSG_NXTHDR(msg, c);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_IV;
    c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + ivlen);
    uint32_t ivlen32 = (uint32_t)ivlen;
    memcpy(CMSG_DATA(c), &ivlen32, sizeof ivlen32); /* struct af_alg_iv: ivlen, then the IV */
    memcpy(CMSG_DATA(c) + sizeof(struct af_alg_iv), iv, ivlen);
    if (aead) {
        c = CMSG_NXTHDR(msg, c);
        c->cmsg_level = SOL_ALG;
        c->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
        c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
        uint32_t assoc = (uint32_t)aad_len;
        memcpy(CMSG_DATA(c), &assoc, sizeof assoc);
    }
}

/* Sends the iovecs of one whole message (no MSG_MORE: the message is complete), then receives the result. */
static int afalg_exchange(crypto_impl *im, struct msghdr *msg, struct iovec *tx, int ntx, struct iovec *rx, int nrx)
{
    size_t want_tx = 0, want_rx = 0;
    for (int i = 0; i < ntx; i++)
        want_tx += tx[i].iov_len;
    for (int i = 0; i < nrx; i++)
        want_rx += rx[i].iov_len;
    msg->msg_iov = tx;
    msg->msg_iovlen = (size_t)ntx;
    ssize_t n = sendmsg(im->op, msg, 0);
    if (n < 0)
        return afalg_error(im, "sendmsg");
    if ((size_t)n != want_tx) {
        snprintf(im->err, sizeof im->err, "AF_ALG sendmsg took %zd of %zu bytes", n, want_tx);
        return -1;
    }
    n = readv(im->op, rx, nrx);
    if (n < 0)
        return afalg_error(im, "read");
    if ((size_t)n != want_rx) {
        snprintf(im->err, sizeof im->err, "AF_ALG read returned %zd of %zu bytes", n, want_rx);
        return -1;
    }
    return 0;
}

/* One cipher request either way. The kernel's AEAD takes AAD || text (|| tag, to decrypt) and returns
 * AAD || text (|| tag, from encrypting); the returned AAD copy lands in a scratch buffer. A decryption whose tag
 * does not authenticate the message fails with EBADMSG. */
static int afalg_cipher(crypto_impl *im, uint32_t op, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
                        const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag)
{
    struct msghdr msg = {0};
    afalg_cbuf cb;
    afalg_controls(im, &msg, &cb, op, iv, aad_len);
    uint8_t aad_out[32];
    struct iovec tx[3], rx[3];
    int ntx = 0, nrx = 0;
    if (aad_len) {
        tx[ntx++] = (struct iovec){(void *)(uintptr_t)aad, aad_len};
        rx[nrx++] = (struct iovec){aad_out, aad_len};
    }
    tx[ntx++] = (struct iovec){(void *)(uintptr_t)in, len};
    if (im->alg->kind == KIND_AEAD && op == ALG_OP_DECRYPT)
        tx[ntx++] = (struct iovec){tag, TAG_BYTES};
    rx[nrx++] = (struct iovec){out, len};
    if (im->alg->kind == KIND_AEAD && op == ALG_OP_ENCRYPT)
        rx[nrx++] = (struct iovec){tag, TAG_BYTES};
    return afalg_exchange(im, &msg, tx, ntx, rx, nrx);
}

static int afalg_enc(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                     size_t len, uint8_t *out, uint8_t *tag)
{
    if (im->alg->kind == KIND_HASH) {
        /* A send without MSG_MORE finishes the hash; the read returns the digest. */
        ssize_t n = send(im->op, in, len, 0);
        if (n < 0)
            return afalg_error(im, "send");
        if ((size_t)n != len) {
            snprintf(im->err, sizeof im->err, "AF_ALG send took %zd of %zu bytes", n, len);
            return -1;
        }
        n = read(im->op, out, im->alg->out_len);
        if (n < 0)
            return afalg_error(im, "read digest");
        if ((size_t)n != im->alg->out_len) {
            snprintf(im->err, sizeof im->err, "AF_ALG returned a %zd-byte digest, expected %zu", n, im->alg->out_len);
            return -1;
        }
        return 0;
    }
    return afalg_cipher(im, ALG_OP_ENCRYPT, iv, aad, aad_len, in, len, out, tag);
}

static int afalg_dec(crypto_impl *im, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                     size_t len, uint8_t *out, const uint8_t *tag)
{
    int rc = afalg_cipher(im, ALG_OP_DECRYPT, iv, aad, aad_len, in, len, out, (uint8_t *)(uintptr_t)tag);
    if (rc != 0 && im->sys_errno == EBADMSG)
        snprintf(im->err, sizeof im->err, "the kernel refused the message (EBADMSG: the tag does not authenticate it)");
    return rc;
}

static void afalg_close(crypto_impl *im)
{
    if (im->op >= 0)
        close(im->op);
    if (im->tfm >= 0)
        close(im->tfm);
    im->op = im->tfm = -1;
}

static int afalg_open(crypto_impl *im, const crypto_alg *a, const uint8_t *key)
{
    impl_reset(im, a);
    im->enc = afalg_enc;
    im->dec = afalg_dec;
    im->close = afalg_close;
    im->stage = "socket";
    im->tfm = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (im->tfm < 0)
        return afalg_error(im, "socket");
    struct sockaddr_alg sa = {.salg_family = AF_ALG};
    snprintf((char *)sa.salg_type, sizeof sa.salg_type, "%s", a->ktype);
    snprintf((char *)sa.salg_name, sizeof sa.salg_name, "%s", a->kname);
    im->stage = "bind";
    if (bind(im->tfm, (struct sockaddr *)&sa, sizeof sa) != 0)
        goto fail;
    im->stage = "setkey";
    if (a->key_len && setsockopt(im->tfm, SOL_ALG, ALG_SET_KEY, key, (socklen_t)a->key_len) != 0)
        goto fail;
    /* The tag size travels in optlen, with no option value. */
    im->stage = "authsize";
    if (a->kind == KIND_AEAD && setsockopt(im->tfm, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, TAG_BYTES) != 0)
        goto fail;
    im->stage = "accept";
    im->op = accept4(im->tfm, NULL, NULL, SOCK_CLOEXEC);
    if (im->op < 0)
        goto fail;
    im->stage = NULL;
    return 0;
fail:
    afalg_error(im, im->stage);
    afalg_close(im);
    return -1;
}

#endif /* BK_HAVE_AF_ALG */

/* Runs the algorithm's known answers through fresh instances from `open_impl`: the output and tag must be
 * the published ones, decryption must give the plaintext back, and a forged tag must be refused (the check
 * the benchmark's own verification relies on). Appends the vector names to `names`. */
static int run_kats(const crypto_alg *a, impl_opener open_impl, char *names, size_t names_cap, char *err,
                    size_t err_cap)
{
    int count = 0;
    names[0] = '\0';
    for (size_t i = 0; i < sizeof crypto_kats / sizeof crypto_kats[0]; i++) {
        const crypto_kat *k = &crypto_kats[i];
        if (strcmp(k->alg, a->name) != 0)
            continue;
        uint8_t key[MAX_KEY], iv[MAX_IV], aad[32], msg[KAT_MAX], want[KAT_MAX], want_tag[TAG_BYTES];
        uint8_t got[KAT_MAX], tag[TAG_BYTES] = {0}, back[KAT_MAX];
        size_t key_len = unhex(k->key, key, sizeof key);
        unhex(k->iv, iv, sizeof iv);
        size_t aad_len = unhex(k->aad, aad, sizeof aad);
        size_t msg_len = k->msg_hex ? unhex(k->msg_hex, msg, sizeof msg) : strlen(k->msg_text);
        if (!k->msg_hex)
            memcpy(msg, k->msg_text, msg_len);
        size_t want_len = unhex(k->out, want, sizeof want);
        unhex(k->tag, want_tag, sizeof want_tag);
        if (key_len != a->key_len) {
            snprintf(err, err_cap, "%s: the vector's key has %zu bytes, %s takes %zu", k->name, key_len, a->name,
                     a->key_len);
            return -1;
        }
        crypto_impl im;
        if (open_impl(&im, a, key) != 0) {
            snprintf(err, err_cap, "%s: %s", k->name, im.err);
            return -1;
        }
        int rc = im.enc(&im, iv, aad, aad_len, msg, msg_len, got, tag);
        if (rc != 0)
            snprintf(err, err_cap, "%s: %s", k->name, im.err);
        else if (a->kind == KIND_HASH ? memcmp(got, want, a->out_len) != 0 || want_len != a->out_len
                                      : memcmp(got, want, msg_len) != 0 || want_len != msg_len)
            rc = -1, snprintf(err, err_cap, "%s: wrong %s", k->name, a->kind == KIND_HASH ? "digest" : "ciphertext");
        else if (a->kind == KIND_AEAD && memcmp(tag, want_tag, TAG_BYTES) != 0)
            rc = -1, snprintf(err, err_cap, "%s: wrong tag", k->name);
        else if (a->kind != KIND_HASH) {
            if (im.dec(&im, iv, aad, aad_len, got, msg_len, back, tag) != 0)
                rc = -1, snprintf(err, err_cap, "%s: decryption failed: %s", k->name, im.err);
            else if (memcmp(back, msg, msg_len) != 0)
                rc = -1, snprintf(err, err_cap, "%s: decryption did not give the plaintext back", k->name);
            else if (a->kind == KIND_AEAD) {
                tag[0] ^= 0x80;
                if (im.dec(&im, iv, aad, aad_len, got, msg_len, back, tag) == 0)
                    rc = -1, snprintf(err, err_cap, "%s: a forged tag was accepted", k->name);
            }
        }
        im.close(&im);
        if (rc != 0)
            return -1;
        size_t used = strlen(names);
        snprintf(names + used, names_cap - used, "%s%s", count ? "; " : "", k->name);
        count++;
    }
    if (count == 0) {
        snprintf(err, err_cap, "no known-answer vector for %s", a->name);
        return -1;
    }
    return 0;
}

/* ---- the benchmark state shared by crypto.evp and crypto.afalg ---- */

typedef struct {
    const crypto_alg *alg;
    crypto_impl im; /* the implementation being measured */
    bool im_open;
    impl_opener open_impl; /* how to make another instance of it (known answers) */
    size_t bytes, block, nblocks;
    uint8_t key[MAX_KEY];
    uint8_t salt[8]; /* the fixed part of every IV */
    uint8_t *in; /* plaintext or message */
    uint8_t *out; /* ciphertext (bytes), or digests (nblocks * out_len) */
    uint8_t *tags; /* AEAD: nblocks * TAG_BYTES */
    uint8_t *scratch; /* one block, for verification */
} crypto_state;

static void crypto_fini(void *state)
{
    crypto_state *s = state;
    if (s->im_open)
        s->im.close(&s->im);
}

/* IV of block b: the fixed salt, then b as a 64-bit big-endian counter (the deterministic construction of
 * SP 800-38D 8.2.1, as TLS 1.2 builds GCM nonces). CBC would want unpredictable IVs in real use; for a
 * benchmark a distinct IV per message is what matters. */
static void block_iv(const crypto_state *s, size_t b, uint8_t *iv)
{
    size_t n = s->alg->iv_len;
    memcpy(iv, s->salt, n - 8);
    for (int i = 0; i < 8; i++)
        iv[n - 1 - (size_t)i] = (uint8_t)((uint64_t)b >> (8 * i));
}

/* AAD of block b: a TLS 1.2 record header (sequence number, application_data, version 3.3, length). */
static void block_aad(size_t b, size_t len, uint8_t *aad)
{
    for (int i = 0; i < 8; i++)
        aad[7 - i] = (uint8_t)((uint64_t)b >> (8 * i));
    aad[8] = 0x17;
    aad[9] = 3;
    aad[10] = 3;
    aad[11] = (uint8_t)(len >> 8);
    aad[12] = (uint8_t)len;
}

static size_t block_len(const crypto_state *s, size_t b)
{
    size_t off = b * s->block;
    return s->bytes - off < s->block ? s->bytes - off : s->block;
}

/* Input shaped like sensor data (16-bit samples of a slow wave plus noise), as the design asks of every
 * family's corpus; cipher and hash speed do not depend on content. */
static void fill_input(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        double v = 6000.0 * sin((double)(i / 2) * (2 * M_PI / 1024.0)) + 300.0 * (bk_rand_unit(&seed) - 0.5);
        int16_t x = (int16_t)lrint(v);
        p[i] = (uint8_t)((uint16_t)x & 0xff);
        p[i + 1] = (uint8_t)((uint16_t)x >> 8);
    }
    if (n % 2)
        p[n - 1] = (uint8_t)bk_rand_next(&seed);
}

/* Validates parameters, allocates the state (*state) and fills the input; the caller then opens the
 * implementation. */
static int crypto_prepare(bk_ctx *ctx, void **state)
{
    const char *name = bk_arg_str(ctx, "algorithm");
    const crypto_alg *a = find_alg(name);
    if (!a)
        return bk_fail(ctx, "algorithm '%s' has no table entry (a bug: the choices are %s)", name, ALG_CHOICES);
    size_t block = (size_t)bk_arg_int(ctx, "block_bytes"), bytes = (size_t)bk_arg_int(ctx, "bytes");
    if (bytes < block)
        return bk_fail(ctx, "bytes=%zu is smaller than block_bytes=%zu: raise bytes or lower block_bytes", bytes,
                       block);
    if (a->kind == KIND_CBC && (block % 16 || bytes % 16))
        return bk_fail(ctx,
                       "%s encrypts whole 16-byte AES blocks without padding: block_bytes=%zu and bytes=%zu must "
                       "both be multiples of 16",
                       a->name, block, bytes);
    crypto_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->alg = a;
    s->bytes = bytes;
    s->block = block;
    s->nblocks = (bytes + block - 1) / block;
    uint64_t seed = 0xc0ffee5eedULL;
    for (size_t i = 0; i < a->key_len; i++)
        s->key[i] = (uint8_t)bk_rand_next(&seed);
    for (size_t i = 0; i < sizeof s->salt; i++)
        s->salt[i] = (uint8_t)bk_rand_next(&seed);
    s->in = bk_run_alloc(ctx, bytes, "the input (lower bytes)");
    s->out = bk_run_alloc(ctx, a->kind == KIND_HASH ? s->nblocks * a->out_len : bytes, "the output (lower bytes)");
    s->tags = a->kind == KIND_AEAD ? bk_run_alloc(ctx, s->nblocks * TAG_BYTES, "the tags (lower bytes)") : NULL;
    s->scratch = bk_run_alloc(ctx, block, "a block");
    if (!s->in || !s->out || !s->scratch || (a->kind == KIND_AEAD && !s->tags))
        return -1;
    fill_input(s->in, bytes, seed);
    bk_set_amount(ctx, "mb_s", (double)bytes);
    bk_info_num(ctx, "blocks_per_rep", (double)s->nblocks);
    if (a->kind == KIND_AEAD)
        bk_info_str(ctx, "message", "AEAD record per block: fresh IV, 13-byte AAD, payload, 16-byte tag");
    else if (a->kind == KIND_CBC)
        bk_info_str(ctx, "message", "CBC message per block with its own IV, no padding");
    else
        bk_info_str(ctx, "message", "one digest per block");
    return 0;
}

static int crypto_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    crypto_state *s = state;
    const crypto_alg *a = s->alg;
    uint8_t iv[MAX_IV], aad[AAD_BYTES];
    for (uint64_t r = 0; r < reps; r++)
        for (size_t b = 0; b < s->nblocks; b++) {
            size_t off = b * s->block, len = block_len(s, b);
            int rc;
            if (a->kind == KIND_HASH) {
                rc = s->im.enc(&s->im, NULL, NULL, 0, s->in + off, len, s->out + b * a->out_len, NULL);
            } else {
                block_iv(s, b, iv);
                bool aead = a->kind == KIND_AEAD;
                if (aead)
                    block_aad(b, len, aad);
                rc = s->im.enc(&s->im, iv, aead ? aad : NULL, aead ? AAD_BYTES : 0, s->in + off, len, s->out + off,
                               aead ? s->tags + b * TAG_BYTES : NULL);
            }
            if (rc != 0)
                return bk_fail(ctx, "%s, block %zu: %s", a->name, b, s->im.err);
        }
    return 0;
}

/* Flips one ciphertext byte (a cipher) or one digest byte (a hash): the round trip, the tag check or the
 * recomputation must then fail. */
static void crypto_corrupt(void *state)
{
    crypto_state *s = state;
    if (s->alg->kind == KIND_HASH)
        s->out[0] ^= 0x01;
    else
        s->out[s->bytes / 2] ^= 0x01;
}

/* The reference that checks the measured output: libcrypto when built with it (for crypto.afalg this is an
 * independent implementation), else another kernel instance. */
static int open_reference(crypto_impl *ref, const crypto_state *s)
{
#if BK_HAVE_CRYPTO
    return evp_open(ref, s->alg, s->key);
#else
    return afalg_open(ref, s->alg, s->key);
#endif
}

static int crypto_verify(bk_ctx *ctx, void *state)
{
    crypto_state *s = state;
    const crypto_alg *a = s->alg;
    uint64_t h = bk_fnv1a(BK_FNV_OFFSET, s->out, a->kind == KIND_HASH ? s->nblocks * a->out_len : s->bytes);
    if (s->tags)
        h = bk_fnv1a(h, s->tags, s->nblocks * TAG_BYTES);
    bk_set_checksum(ctx, h);

    char names[256], err[300];
    if (run_kats(a, s->open_impl, names, sizeof names, err, sizeof err) != 0) {
        bk_info_str(ctx, "kat", "fail");
        return bk_fail(ctx, "known-answer test of %s failed: %s", a->name, err);
    }
    bk_info_str(ctx, "kat", "pass");
    bk_info_str(ctx, "kat_vectors", names);

    crypto_impl ref;
    if (open_reference(&ref, s) != 0)
        return bk_fail(ctx, "cannot open the reference %s to check the output: %s", a->name, ref.err);
    int rc = 0;
    uint8_t iv[MAX_IV], aad[AAD_BYTES], digest[MAX_OUT];
    for (size_t b = 0; b < s->nblocks && rc == 0; b++) {
        size_t off = b * s->block, len = block_len(s, b);
        if (a->kind == KIND_HASH) {
            if (ref.enc(&ref, NULL, NULL, 0, s->in + off, len, digest, NULL) != 0)
                rc = bk_fail(ctx, "reference digest of block %zu failed: %s", b, ref.err);
            else if (memcmp(digest, s->out + b * a->out_len, a->out_len) != 0)
                rc = bk_fail(ctx, "the digest of block %zu differs from a recomputation", b);
            continue;
        }
        bool aead = a->kind == KIND_AEAD;
        block_iv(s, b, iv);
        if (aead)
            block_aad(b, len, aad);
        if (ref.dec(&ref, iv, aead ? aad : NULL, aead ? AAD_BYTES : 0, s->out + off, len, s->scratch,
                    aead ? s->tags + b * TAG_BYTES : NULL) != 0)
            rc = bk_fail(ctx, "round trip of block %zu failed: %s", b, ref.err);
        else if (memcmp(s->scratch, s->in + off, len) != 0)
            rc = bk_fail(ctx, "block %zu does not decrypt to its plaintext", b);
    }
    ref.close(&ref);
    return rc;
}

/* Both kernels share everything after init: only how an implementation opens (and whether it can) differs. A
 * build without a kernel's library sets only `supported`, to the reason, and leaves the hooks NULL. */
#define CRYPTO_HOOKS(supported_fn, init_fn)                                                                            \
    .supported = (supported_fn), .init = (init_fn), .run = crypto_run, .corrupt = crypto_corrupt,                      \
    .verify = crypto_verify, .fini = crypto_fini

#endif /* CRYPTO_ANY */

/* The two kernels' descriptors: the same parameters and metrics; `hooks` is CRYPTO_HOOKS(...) or `.supported`. */
#define CRYPTO_KERNEL(ident, kname, summ, hooks)                                                                       \
    const bk_kernel ident = {                                                                                          \
        .name = kname,                                                                                                 \
        .family = "crypto",                                                                                            \
        .summary = summ,                                                                                               \
        .params = crypto_params,                                                                                       \
        .metrics = crypto_metrics,                                                                                     \
        hooks,                                                                                                         \
    }

/* ---- crypto.evp ---- */

#if BK_HAVE_CRYPTO

static int evp_init(bk_ctx *ctx, void **state)
{
    if (crypto_prepare(ctx, state) != 0)
        return -1;
    crypto_state *s = *state;
    s->open_impl = evp_open;
    if (evp_open(&s->im, s->alg, s->key) != 0)
        return bk_fail(ctx, "%s: %s", s->alg->name, s->im.err);
    s->im_open = true;
    bk_info_str(ctx, "openssl_version", OpenSSL_version(OPENSSL_VERSION));
    const OSSL_PROVIDER *prov = s->im.cipher ? EVP_CIPHER_get0_provider(s->im.cipher) : EVP_MD_get0_provider(s->im.md);
    bk_info_str(ctx, "provider", prov ? OSSL_PROVIDER_get0_name(prov) : "unknown");
    bk_info_str(ctx, "evp_name", s->im.cipher ? EVP_CIPHER_get0_name(s->im.cipher) : EVP_MD_get0_name(s->im.md));
    return 0;
}

#define EVP_HOOKS CRYPTO_HOOKS(NULL, evp_init)

#else

static const char *evp_unsupported(void) { return "built without libcrypto (install libssl-dev and rebuild boardlab)"; }

#define EVP_HOOKS .supported = evp_unsupported

#endif

CRYPTO_KERNEL(bk_crypto_evp, "crypto.evp",
              "AES-GCM/CBC, ChaCha20-Poly1305, SHA-1/256, MD5 through libcrypto's EVP API (as openssl speed -evp)",
              EVP_HOOKS);

/* ---- crypto.afalg ---- */

#if BK_HAVE_AF_ALG

typedef struct {
    char name[128], driver[128], module[64], type[32], selftest[32], internal[8];
    long priority;
} proc_entry;

static bool type_serves(const char *ktype, const char *proc_type)
{
    if (strcmp(ktype, "hash") == 0)
        return strcmp(proc_type, "shash") == 0 || strcmp(proc_type, "ahash") == 0;
    if (strcmp(ktype, "skcipher") == 0)
        return strcmp(proc_type, "skcipher") == 0 || strcmp(proc_type, "lskcipher") == 0;
    return strcmp(proc_type, ktype) == 0;
}

/* /proc/crypto: blank-line separated entries of "key : value" lines. Among the entries named `name` whose
 * type the AF_ALG socket type can use (and that are not internal helpers), the highest priority is the one
 * the kernel picks. Returns how many matched, or -1 with errno when the file cannot be read. */
static int proc_crypto_best(const char *name, const char *ktype, proc_entry *best)
{
    FILE *f = fopen("/proc/crypto", "r");
    if (!f)
        return -1;
    int matches = 0;
    proc_entry e = {0};
    char line[512];
    bool more = true;
    while (more) {
        more = fgets(line, sizeof line, f) != NULL;
        char *colon = more ? strchr(line, ':') : NULL;
        if (colon) {
            char *k = line, *v = colon + 1, *end = colon;
            while (end > k && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            *end = '\0';
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = '\0';
            if (strcmp(k, "name") == 0)
                snprintf(e.name, sizeof e.name, "%s", v);
            else if (strcmp(k, "driver") == 0)
                snprintf(e.driver, sizeof e.driver, "%s", v);
            else if (strcmp(k, "module") == 0)
                snprintf(e.module, sizeof e.module, "%s", v);
            else if (strcmp(k, "type") == 0)
                snprintf(e.type, sizeof e.type, "%s", v);
            else if (strcmp(k, "selftest") == 0)
                snprintf(e.selftest, sizeof e.selftest, "%s", v);
            else if (strcmp(k, "internal") == 0)
                snprintf(e.internal, sizeof e.internal, "%s", v);
            else if (strcmp(k, "priority") == 0)
                e.priority = strtol(v, NULL, 10);
            continue;
        }
        /* A blank line (or the end of the file) closes an entry. */
        if (e.name[0] && strcmp(e.name, name) == 0 && type_serves(ktype, e.type) && strcmp(e.internal, "yes") != 0) {
            if (matches == 0 || e.priority > best->priority)
                *best = e;
            matches++;
        }
        memset(&e, 0, sizeof e);
    }
    fclose(f);
    return matches;
}

/* Which kind of implementation a driver name denotes. Heuristic, from the naming conventions of the drivers in
 * the kernel tree:
 *  - SoC engines carry their block's name (omap-aes, atmel-sha, sun8i-ce, caam, talitos, qce, ...); only those
 *    that would otherwise look like CPU drivers need listing (sun8i-ce ends in -ce like ARM's Crypto Extensions);
 *  - CPU-instruction drivers carry the instruction set: aesni, clmulni, -ce (ARMv8 Crypto Extensions), -neon,
 *    -avx/-avx2/-avx512, -ssse3, -simd (x86 chacha20-simd), -x86_64, -ni (SHA-NI), -arm/-arm64 assembly,
 *    -p8/-vmx (POWER), riscv zvk...;
 *  - "-generic" and aes-fixed-time are the portable C implementations;
 *  - "-lib" (sha256-lib, md5-lib since Linux 6.16) wraps the kernel's crypto library, which itself picks
 *    CPU-optimised code when the CPU has it; the name cannot say which, so it is reported as "library";
 *  - any other driver name is taken as a hardware engine, as the remaining drivers in the tree are.
 * Template instances (gcm_base(ctr(aes-aesni),ghash-clmulni), cbc(ecb(aes-fixed-time))) are judged by their
 * inner drivers: the strongest kind among them (engine > cpu > library > generic). */
typedef enum { IMPL_GENERIC, IMPL_LIBRARY, IMPL_CPU, IMPL_ENGINE } impl_kind;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static impl_kind classify_leaf(const char *d)
{
    static const char *const engines[] = {"sun8i-ce", "sun8i-ss", "sun4i-ss", "omap",     "atmel",  "caam",
                                          "talitos",  "mv-",      "marvell",  "safexcel", "stm32",  "rk-",
                                          "rockchip", "exynos",   "s5p",      "virtio",   "ccree",  "ccp",
                                          "qat",      "hisi",     "starfive", "sa2ul",    "keembay"};
    static const char *const cpus[] = {"aesni",  "aes-ni", "clmulni", "-neon",  "neonbs",  "-avx",    "avx2",
                                       "avx512", "-ssse3", "-sse2",   "x86_64", "-x86",    "-simd",   "-intel",
                                       "-ni",    "-arm",   "-asm",    "-p8",    "-vmx",    "-ppc",    "s390",
                                       "riscv",  "zvk",    "-mips",   "octeon", "padlock", "sparc64", "vaes"};
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (strstr(d, engines[i]))
            return IMPL_ENGINE;
    if (ends_with(d, "-ce") || strstr(d, "-ce-"))
        return IMPL_CPU;
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        if (strstr(d, cpus[i]))
            return IMPL_CPU;
    if (ends_with(d, "-generic") || strstr(d, "fixed-time"))
        return IMPL_GENERIC;
    if (ends_with(d, "-lib"))
        return IMPL_LIBRARY;
    return IMPL_ENGINE;
}

static const char *classify_driver(const char *driver)
{
    impl_kind kind = IMPL_GENERIC;
    char leaf[128];
    size_t n = 0;
    for (const char *p = driver;; p++) {
        if (*p == '(' || *p == ')' || *p == ',' || *p == '\0') {
            leaf[n] = '\0';
            /* A name followed by '(' is a template (cbc, gcm_base, rfc7539), not a driver. */
            if (n && *p != '(') {
                impl_kind k = classify_leaf(leaf);
                if (k > kind)
                    kind = k;
            }
            n = 0;
            if (*p == '\0')
                break;
        } else if (n + 1 < sizeof leaf) {
            leaf[n++] = *p;
        }
    }
    static const char *const names[] = {"generic", "library", "cpu-instructions", "hardware-engine"};
    return names[kind];
}

static void report_proc_crypto(bk_ctx *ctx, const crypto_alg *a)
{
    proc_entry e = {0};
    int n = proc_crypto_best(a->kname, a->ktype, &e);
    if (n < 0) {
        char why[160];
        snprintf(why, sizeof why, "/proc/crypto unreadable: %s", strerror(errno));
        bk_info_str(ctx, "proc_crypto", why);
        return;
    }
    bk_info_num(ctx, "proc_crypto_matches", n);
    if (n == 0) {
        bk_info_str(ctx, "proc_crypto", "no entry of that name (the kernel builds template instances on first use)");
        return;
    }
    bk_info_str(ctx, "driver", e.driver);
    bk_info_str(ctx, "module", e.module);
    bk_info_num(ctx, "priority", (double)e.priority);
    bk_info_str(ctx, "selftest", e.selftest[0] ? e.selftest : "unknown");
    bk_info_str(ctx, "implementation", classify_driver(e.driver));
}

static const char *user_api_option(const char *ktype)
{
    if (strcmp(ktype, "aead") == 0)
        return "CONFIG_CRYPTO_USER_API_AEAD (module algif_aead)";
    if (strcmp(ktype, "skcipher") == 0)
        return "CONFIG_CRYPTO_USER_API_SKCIPHER (module algif_skcipher)";
    return "CONFIG_CRYPTO_USER_API_HASH (module algif_hash)";
}

/* Why AF_ALG cannot serve a: the kernel lacks the sockets or the algorithm (true, why filled), or not
 * (false: a real failure, in im->err). */
static bool afalg_why_unsupported(const crypto_impl *im, const crypto_alg *a, char *why, size_t cap)
{
    int e = im->sys_errno;
    const char *stage = im->stage ? im->stage : "?";
    if (strcmp(stage, "socket") == 0)
        snprintf(why, cap,
                 "this kernel offers no AF_ALG sockets (socket: %s): the kernel crypto API is reachable from "
                 "user space only with CONFIG_CRYPTO_USER_API and %s",
                 strerror(e), user_api_option(a->ktype));
    else if (strcmp(stage, "bind") == 0)
        snprintf(why, cap,
                 "the kernel cannot serve %s to an AF_ALG %s socket (bind: %s): it needs %s and the algorithm "
                 "(%s, or a driver providing it)",
                 a->kname, a->ktype, strerror(e), user_api_option(a->ktype), a->kconfig);
    else {
        snprintf(why, cap, "%s: %s", a->kname, im->err);
        return false;
    }
    return true;
}

static int afalg_init(bk_ctx *ctx, void **state)
{
    if (crypto_prepare(ctx, state) != 0)
        return -1;
    crypto_state *s = *state;
    const crypto_alg *a = s->alg;
    s->open_impl = afalg_open;
    bk_info_str(ctx, "kernel_algorithm", a->kname);
    bk_info_str(ctx, "socket_type", a->ktype);
    if (afalg_open(&s->im, a, s->key) != 0) {
        report_proc_crypto(ctx, a);
        char why[512];
        return afalg_why_unsupported(&s->im, a, why, sizeof why) ? bk_unsupported(ctx, "%s", why)
                                                                 : bk_fail(ctx, "%s", why);
    }
    s->im_open = true;
    /* After the bind: a template instance such as gcm(aes) exists only once something asked for it. */
    report_proc_crypto(ctx, a);
#if BK_HAVE_CRYPTO
    bk_info_str(ctx, "reference", "libcrypto (round trip)");
#else
    bk_info_str(ctx, "reference", "another AF_ALG instance (built without libcrypto)");
#endif
    return 0;
}

/* The catalog must agree with a run: a kernel without AF_ALG sockets (CONFIG_CRYPTO_USER_API unset) is
 * unsupported here too, not only when a run tries. Which algorithms the kernel serves is still per run. */
static const char *afalg_available(void)
{
    int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        close(fd);
        return NULL;
    }
    static char why[256];
    snprintf(why, sizeof why,
             "this kernel offers no AF_ALG sockets (socket: %s): the kernel crypto API is reachable from user space "
             "only with CONFIG_CRYPTO_USER_API (modules algif_skcipher, algif_hash, algif_aead)",
             strerror(errno));
    return why;
}

#define AFALG_HOOKS CRYPTO_HOOKS(afalg_available, afalg_init)

#else

static const char *afalg_unsupported(void)
{
    return "built without <linux/if_alg.h> (install the Linux UAPI headers, linux-libc-dev, and rebuild boardlab)";
}

#define AFALG_HOOKS .supported = afalg_unsupported

#endif

CRYPTO_KERNEL(bk_crypto_afalg, "crypto.afalg",
              "the same ciphers and hashes through the kernel crypto API (AF_ALG), the path to SoC crypto engines",
              AFALG_HOOKS);

/* ---- an AF_ALG AEAD for other kernels (crypto_afalg.h) ---- */

#if BK_HAVE_AF_ALG

struct bk_afalg_aead {
    crypto_impl im;
};

bk_afalg_aead *bk_afalg_aead_open(const char *alg, const uint8_t *key, char *why, size_t why_cap, bool *unsupported)
{
    const crypto_alg *a = find_alg(alg);
    *unsupported = false;
    if (!a || a->kind != KIND_AEAD) {
        snprintf(why, why_cap, "%s is not an AEAD this build knows", alg);
        return NULL;
    }
    /* The kernel's implementation must give the published answers before it carries data. */
    char names[256], err[256];
    if (run_kats(a, afalg_open, names, sizeof names, err, sizeof err) < 0) {
        crypto_impl probe;
        if (afalg_open(&probe, a, key) != 0) {
            *unsupported = afalg_why_unsupported(&probe, a, why, why_cap);
            return NULL;
        }
        probe.close(&probe);
        snprintf(why, why_cap, "AF_ALG %s failed its known answers: %s", a->kname, err);
        return NULL;
    }
    bk_afalg_aead *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    if (afalg_open(&h->im, a, key) != 0) {
        *unsupported = afalg_why_unsupported(&h->im, a, why, why_cap);
        free(h);
        return NULL;
    }
    return h;
}

int bk_afalg_aead_seal(bk_afalg_aead *h, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                       size_t len, uint8_t *out, uint8_t *tag)
{
    return afalg_enc(&h->im, iv, aad, aad_len, in, len, out, tag);
}

const char *bk_afalg_aead_error(const bk_afalg_aead *h) { return h->im.err; }

void bk_afalg_aead_close(bk_afalg_aead *h)
{
    if (h) {
        afalg_close(&h->im);
        free(h);
    }
}

#else

bk_afalg_aead *bk_afalg_aead_open(const char *alg, const uint8_t *key, char *why, size_t why_cap, bool *unsupported)
{
    (void)alg, (void)key;
    *unsupported = true;
    snprintf(why, why_cap, "built without <linux/if_alg.h> (install linux-libc-dev and rebuild boardlab)");
    return NULL;
}

int bk_afalg_aead_seal(bk_afalg_aead *h, const uint8_t *iv, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                       size_t len, uint8_t *out, uint8_t *tag)
{
    (void)h, (void)iv, (void)aad, (void)aad_len, (void)in, (void)len, (void)out, (void)tag;
    return -1;
}

const char *bk_afalg_aead_error(const bk_afalg_aead *h)
{
    (void)h;
    return "built without AF_ALG";
}

void bk_afalg_aead_close(bk_afalg_aead *h) { (void)h; }

#endif
