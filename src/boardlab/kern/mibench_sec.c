/* MiBench-style security kernels (Guthaus et al. 2001, "security" category): blowfish and sha1.
 *
 * blowfish: Schneier's Blowfish (Fast Software Encryption, 1993), a 16-round Feistel cipher on 64-bit
 *   blocks whose P-array and S-boxes start as the hexadecimal digits of pi. MiBench's `bf` encrypts a
 *   text file in CFB64 mode (OpenSSL's BF_cfb64_encrypt); the default here is the same, CBC is offered.
 * sha1: SHA-1 as specified in FIPS 180-4, over a buffer.
 *
 * Both are checked on every run with their published known-answer vectors before the benchmarked result
 * is compared with an independent computation. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if BK_HAVE_CRYPTO
#include <openssl/evp.h>
#endif

/* ================================ blowfish ================================ */

/* The fraction of pi in hexadecimal, 32 bits per word: P1..P18 then S1[0..255] .. S4[0..255].
 * Data, generated (not copied) with Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in integer
 * fixed point with 64 guard bits, e.g. in Python:
 *   def atan_inv(m, one):
 *       t, x, k = 0, one // m, 0
 *       while x: t, x, k = t + (-1) ** k * (x // (2 * k + 1)), x // (m * m), k + 1
 *       return t
 *   bits = 32 * 1042 + 64; pi = 16 * atan_inv(5, 1 << bits) - 4 * atan_inv(239, 1 << bits)
 *   frac = (pi - (3 << bits)) >> 64   # word i = frac >> (32 * (1041 - i)) & 0xffffffff
 * A single wrong word changes the key schedule, so the known-answer vectors in verify prove the table. */
static const uint32_t bf_pi_words[18 + 4 * 256] = {
    0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0x082efa98, 0xec4e6c89, 0x452821e6,
    0x38d01377, 0xbe5466cf, 0x34e90c6c, 0xc0ac29b7, 0xc97c50dd, 0x3f84d5b5, 0xb5470917, 0x9216d5d9, 0x8979fb1b,
    0xd1310ba6, 0x98dfb5ac, 0x2ffd72db, 0xd01adfb7, 0xb8e1afed, 0x6a267e96, 0xba7c9045, 0xf12c7f99, 0x24a19947,
    0xb3916cf7, 0x0801f2e2, 0x858efc16, 0x636920d8, 0x71574e69, 0xa458fea3, 0xf4933d7e, 0x0d95748f, 0x728eb658,
    0x718bcd58, 0x82154aee, 0x7b54a41d, 0xc25a59b5, 0x9c30d539, 0x2af26013, 0xc5d1b023, 0x286085f0, 0xca417918,
    0xb8db38ef, 0x8e79dcb0, 0x603a180e, 0x6c9e0e8b, 0xb01e8a3e, 0xd71577c1, 0xbd314b27, 0x78af2fda, 0x55605c60,
    0xe65525f3, 0xaa55ab94, 0x57489862, 0x63e81440, 0x55ca396a, 0x2aab10b6, 0xb4cc5c34, 0x1141e8ce, 0xa15486af,
    0x7c72e993, 0xb3ee1411, 0x636fbc2a, 0x2ba9c55d, 0x741831f6, 0xce5c3e16, 0x9b87931e, 0xafd6ba33, 0x6c24cf5c,
    0x7a325381, 0x28958677, 0x3b8f4898, 0x6b4bb9af, 0xc4bfe81b, 0x66282193, 0x61d809cc, 0xfb21a991, 0x487cac60,
    0x5dec8032, 0xef845d5d, 0xe98575b1, 0xdc262302, 0xeb651b88, 0x23893e81, 0xd396acc5, 0x0f6d6ff3, 0x83f44239,
    0x2e0b4482, 0xa4842004, 0x69c8f04a, 0x9e1f9b5e, 0x21c66842, 0xf6e96c9a, 0x670c9c61, 0xabd388f0, 0x6a51a0d2,
    0xd8542f68, 0x960fa728, 0xab5133a3, 0x6eef0b6c, 0x137a3be4, 0xba3bf050, 0x7efb2a98, 0xa1f1651d, 0x39af0176,
    0x66ca593e, 0x82430e88, 0x8cee8619, 0x456f9fb4, 0x7d84a5c3, 0x3b8b5ebe, 0xe06f75d8, 0x85c12073, 0x401a449f,
    0x56c16aa6, 0x4ed3aa62, 0x363f7706, 0x1bfedf72, 0x429b023d, 0x37d0d724, 0xd00a1248, 0xdb0fead3, 0x49f1c09b,
    0x075372c9, 0x80991b7b, 0x25d479d8, 0xf6e8def7, 0xe3fe501a, 0xb6794c3b, 0x976ce0bd, 0x04c006ba, 0xc1a94fb6,
    0x409f60c4, 0x5e5c9ec2, 0x196a2463, 0x68fb6faf, 0x3e6c53b5, 0x1339b2eb, 0x3b52ec6f, 0x6dfc511f, 0x9b30952c,
    0xcc814544, 0xaf5ebd09, 0xbee3d004, 0xde334afd, 0x660f2807, 0x192e4bb3, 0xc0cba857, 0x45c8740f, 0xd20b5f39,
    0xb9d3fbdb, 0x5579c0bd, 0x1a60320a, 0xd6a100c6, 0x402c7279, 0x679f25fe, 0xfb1fa3cc, 0x8ea5e9f8, 0xdb3222f8,
    0x3c7516df, 0xfd616b15, 0x2f501ec8, 0xad0552ab, 0x323db5fa, 0xfd238760, 0x53317b48, 0x3e00df82, 0x9e5c57bb,
    0xca6f8ca0, 0x1a87562e, 0xdf1769db, 0xd542a8f6, 0x287effc3, 0xac6732c6, 0x8c4f5573, 0x695b27b0, 0xbbca58c8,
    0xe1ffa35d, 0xb8f011a0, 0x10fa3d98, 0xfd2183b8, 0x4afcb56c, 0x2dd1d35b, 0x9a53e479, 0xb6f84565, 0xd28e49bc,
    0x4bfb9790, 0xe1ddf2da, 0xa4cb7e33, 0x62fb1341, 0xcee4c6e8, 0xef20cada, 0x36774c01, 0xd07e9efe, 0x2bf11fb4,
    0x95dbda4d, 0xae909198, 0xeaad8e71, 0x6b93d5a0, 0xd08ed1d0, 0xafc725e0, 0x8e3c5b2f, 0x8e7594b7, 0x8ff6e2fb,
    0xf2122b64, 0x8888b812, 0x900df01c, 0x4fad5ea0, 0x688fc31c, 0xd1cff191, 0xb3a8c1ad, 0x2f2f2218, 0xbe0e1777,
    0xea752dfe, 0x8b021fa1, 0xe5a0cc0f, 0xb56f74e8, 0x18acf3d6, 0xce89e299, 0xb4a84fe0, 0xfd13e0b7, 0x7cc43b81,
    0xd2ada8d9, 0x165fa266, 0x80957705, 0x93cc7314, 0x211a1477, 0xe6ad2065, 0x77b5fa86, 0xc75442f5, 0xfb9d35cf,
    0xebcdaf0c, 0x7b3e89a0, 0xd6411bd3, 0xae1e7e49, 0x00250e2d, 0x2071b35e, 0x226800bb, 0x57b8e0af, 0x2464369b,
    0xf009b91e, 0x5563911d, 0x59dfa6aa, 0x78c14389, 0xd95a537f, 0x207d5ba2, 0x02e5b9c5, 0x83260376, 0x6295cfa9,
    0x11c81968, 0x4e734a41, 0xb3472dca, 0x7b14a94a, 0x1b510052, 0x9a532915, 0xd60f573f, 0xbc9bc6e4, 0x2b60a476,
    0x81e67400, 0x08ba6fb5, 0x571be91f, 0xf296ec6b, 0x2a0dd915, 0xb6636521, 0xe7b9f9b6, 0xff34052e, 0xc5855664,
    0x53b02d5d, 0xa99f8fa1, 0x08ba4799, 0x6e85076a, 0x4b7a70e9, 0xb5b32944, 0xdb75092e, 0xc4192623, 0xad6ea6b0,
    0x49a7df7d, 0x9cee60b8, 0x8fedb266, 0xecaa8c71, 0x699a17ff, 0x5664526c, 0xc2b19ee1, 0x193602a5, 0x75094c29,
    0xa0591340, 0xe4183a3e, 0x3f54989a, 0x5b429d65, 0x6b8fe4d6, 0x99f73fd6, 0xa1d29c07, 0xefe830f5, 0x4d2d38e6,
    0xf0255dc1, 0x4cdd2086, 0x8470eb26, 0x6382e9c6, 0x021ecc5e, 0x09686b3f, 0x3ebaefc9, 0x3c971814, 0x6b6a70a1,
    0x687f3584, 0x52a0e286, 0xb79c5305, 0xaa500737, 0x3e07841c, 0x7fdeae5c, 0x8e7d44ec, 0x5716f2b8, 0xb03ada37,
    0xf0500c0d, 0xf01c1f04, 0x0200b3ff, 0xae0cf51a, 0x3cb574b2, 0x25837a58, 0xdc0921bd, 0xd19113f9, 0x7ca92ff6,
    0x94324773, 0x22f54701, 0x3ae5e581, 0x37c2dadc, 0xc8b57634, 0x9af3dda7, 0xa9446146, 0x0fd0030e, 0xecc8c73e,
    0xa4751e41, 0xe238cd99, 0x3bea0e2f, 0x3280bba1, 0x183eb331, 0x4e548b38, 0x4f6db908, 0x6f420d03, 0xf60a04bf,
    0x2cb81290, 0x24977c79, 0x5679b072, 0xbcaf89af, 0xde9a771f, 0xd9930810, 0xb38bae12, 0xdccf3f2e, 0x5512721f,
    0x2e6b7124, 0x501adde6, 0x9f84cd87, 0x7a584718, 0x7408da17, 0xbc9f9abc, 0xe94b7d8c, 0xec7aec3a, 0xdb851dfa,
    0x63094366, 0xc464c3d2, 0xef1c1847, 0x3215d908, 0xdd433b37, 0x24c2ba16, 0x12a14d43, 0x2a65c451, 0x50940002,
    0x133ae4dd, 0x71dff89e, 0x10314e55, 0x81ac77d6, 0x5f11199b, 0x043556f1, 0xd7a3c76b, 0x3c11183b, 0x5924a509,
    0xf28fe6ed, 0x97f1fbfa, 0x9ebabf2c, 0x1e153c6e, 0x86e34570, 0xeae96fb1, 0x860e5e0a, 0x5a3e2ab3, 0x771fe71c,
    0x4e3d06fa, 0x2965dcb9, 0x99e71d0f, 0x803e89d6, 0x5266c825, 0x2e4cc978, 0x9c10b36a, 0xc6150eba, 0x94e2ea78,
    0xa5fc3c53, 0x1e0a2df4, 0xf2f74ea7, 0x361d2b3d, 0x1939260f, 0x19c27960, 0x5223a708, 0xf71312b6, 0xebadfe6e,
    0xeac31f66, 0xe3bc4595, 0xa67bc883, 0xb17f37d1, 0x018cff28, 0xc332ddef, 0xbe6c5aa5, 0x65582185, 0x68ab9802,
    0xeecea50f, 0xdb2f953b, 0x2aef7dad, 0x5b6e2f84, 0x1521b628, 0x29076170, 0xecdd4775, 0x619f1510, 0x13cca830,
    0xeb61bd96, 0x0334fe1e, 0xaa0363cf, 0xb5735c90, 0x4c70a239, 0xd59e9e0b, 0xcbaade14, 0xeecc86bc, 0x60622ca7,
    0x9cab5cab, 0xb2f3846e, 0x648b1eaf, 0x19bdf0ca, 0xa02369b9, 0x655abb50, 0x40685a32, 0x3c2ab4b3, 0x319ee9d5,
    0xc021b8f7, 0x9b540b19, 0x875fa099, 0x95f7997e, 0x623d7da8, 0xf837889a, 0x97e32d77, 0x11ed935f, 0x16681281,
    0x0e358829, 0xc7e61fd6, 0x96dedfa1, 0x7858ba99, 0x57f584a5, 0x1b227263, 0x9b83c3ff, 0x1ac24696, 0xcdb30aeb,
    0x532e3054, 0x8fd948e4, 0x6dbc3128, 0x58ebf2ef, 0x34c6ffea, 0xfe28ed61, 0xee7c3c73, 0x5d4a14d9, 0xe864b7e3,
    0x42105d14, 0x203e13e0, 0x45eee2b6, 0xa3aaabea, 0xdb6c4f15, 0xfacb4fd0, 0xc742f442, 0xef6abbb5, 0x654f3b1d,
    0x41cd2105, 0xd81e799e, 0x86854dc7, 0xe44b476a, 0x3d816250, 0xcf62a1f2, 0x5b8d2646, 0xfc8883a0, 0xc1c7b6a3,
    0x7f1524c3, 0x69cb7492, 0x47848a0b, 0x5692b285, 0x095bbf00, 0xad19489d, 0x1462b174, 0x23820e00, 0x58428d2a,
    0x0c55f5ea, 0x1dadf43e, 0x233f7061, 0x3372f092, 0x8d937e41, 0xd65fecf1, 0x6c223bdb, 0x7cde3759, 0xcbee7460,
    0x4085f2a7, 0xce77326e, 0xa6078084, 0x19f8509e, 0xe8efd855, 0x61d99735, 0xa969a7aa, 0xc50c06c2, 0x5a04abfc,
    0x800bcadc, 0x9e447a2e, 0xc3453484, 0xfdd56705, 0x0e1e9ec9, 0xdb73dbd3, 0x105588cd, 0x675fda79, 0xe3674340,
    0xc5c43465, 0x713e38d8, 0x3d28f89e, 0xf16dff20, 0x153e21e7, 0x8fb03d4a, 0xe6e39f2b, 0xdb83adf7, 0xe93d5a68,
    0x948140f7, 0xf64c261c, 0x94692934, 0x411520f7, 0x7602d4f7, 0xbcf46b2e, 0xd4a20068, 0xd4082471, 0x3320f46a,
    0x43b7d4b7, 0x500061af, 0x1e39f62e, 0x97244546, 0x14214f74, 0xbf8b8840, 0x4d95fc1d, 0x96b591af, 0x70f4ddd3,
    0x66a02f45, 0xbfbc09ec, 0x03bd9785, 0x7fac6dd0, 0x31cb8504, 0x96eb27b3, 0x55fd3941, 0xda2547e6, 0xabca0a9a,
    0x28507825, 0x530429f4, 0x0a2c86da, 0xe9b66dfb, 0x68dc1462, 0xd7486900, 0x680ec0a4, 0x27a18dee, 0x4f3ffea2,
    0xe887ad8c, 0xb58ce006, 0x7af4d6b6, 0xaace1e7c, 0xd3375fec, 0xce78a399, 0x406b2a42, 0x20fe9e35, 0xd9f385b9,
    0xee39d7ab, 0x3b124e8b, 0x1dc9faf7, 0x4b6d1856, 0x26a36631, 0xeae397b2, 0x3a6efa74, 0xdd5b4332, 0x6841e7f7,
    0xca7820fb, 0xfb0af54e, 0xd8feb397, 0x454056ac, 0xba489527, 0x55533a3a, 0x20838d87, 0xfe6ba9b7, 0xd096954b,
    0x55a867bc, 0xa1159a58, 0xcca92963, 0x99e1db33, 0xa62a4a56, 0x3f3125f9, 0x5ef47e1c, 0x9029317c, 0xfdf8e802,
    0x04272f70, 0x80bb155c, 0x05282ce3, 0x95c11548, 0xe4c66d22, 0x48c1133f, 0xc70f86dc, 0x07f9c9ee, 0x41041f0f,
    0x404779a4, 0x5d886e17, 0x325f51eb, 0xd59bc0d1, 0xf2bcc18f, 0x41113564, 0x257b7834, 0x602a9c60, 0xdff8e8a3,
    0x1f636c1b, 0x0e12b4c2, 0x02e1329e, 0xaf664fd1, 0xcad18115, 0x6b2395e0, 0x333e92e1, 0x3b240b62, 0xeebeb922,
    0x85b2a20e, 0xe6ba0d99, 0xde720c8c, 0x2da2f728, 0xd0127845, 0x95b794fd, 0x647d0862, 0xe7ccf5f0, 0x5449a36f,
    0x877d48fa, 0xc39dfd27, 0xf33e8d1e, 0x0a476341, 0x992eff74, 0x3a6f6eab, 0xf4f8fd37, 0xa812dc60, 0xa1ebddf8,
    0x991be14c, 0xdb6e6b0d, 0xc67b5510, 0x6d672c37, 0x2765d43b, 0xdcd0e804, 0xf1290dc7, 0xcc00ffa3, 0xb5390f92,
    0x690fed0b, 0x667b9ffb, 0xcedb7d9c, 0xa091cf0b, 0xd9155ea3, 0xbb132f88, 0x515bad24, 0x7b9479bf, 0x763bd6eb,
    0x37392eb3, 0xcc115979, 0x8026e297, 0xf42e312d, 0x6842ada7, 0xc66a2b3b, 0x12754ccc, 0x782ef11c, 0x6a124237,
    0xb79251e7, 0x06a1bbe6, 0x4bfb6350, 0x1a6b1018, 0x11caedfa, 0x3d25bdd8, 0xe2e1c3c9, 0x44421659, 0x0a121386,
    0xd90cec6e, 0xd5abea2a, 0x64af674e, 0xda86a85f, 0xbebfe988, 0x64e4c3fe, 0x9dbc8057, 0xf0f7c086, 0x60787bf8,
    0x6003604d, 0xd1fd8346, 0xf6381fb0, 0x7745ae04, 0xd736fccc, 0x83426b33, 0xf01eab71, 0xb0804187, 0x3c005e5f,
    0x77a057be, 0xbde8ae24, 0x55464299, 0xbf582e61, 0x4e58f48f, 0xf2ddfda2, 0xf474ef38, 0x8789bdc2, 0x5366f9c3,
    0xc8b38e74, 0xb475f255, 0x46fcd9b9, 0x7aeb2661, 0x8b1ddf84, 0x846a0e79, 0x915f95e2, 0x466e598e, 0x20b45770,
    0x8cd55591, 0xc902de4c, 0xb90bace1, 0xbb8205d0, 0x11a86248, 0x7574a99e, 0xb77f19b6, 0xe0a9dc09, 0x662d09a1,
    0xc4324633, 0xe85a1f02, 0x09f0be8c, 0x4a99a025, 0x1d6efe10, 0x1ab93d1d, 0x0ba5a4df, 0xa186f20f, 0x2868f169,
    0xdcb7da83, 0x573906fe, 0xa1e2ce9b, 0x4fcd7f52, 0x50115e01, 0xa70683fa, 0xa002b5c4, 0x0de6d027, 0x9af88c27,
    0x773f8641, 0xc3604c06, 0x61a806b5, 0xf0177a28, 0xc0f586e0, 0x006058aa, 0x30dc7d62, 0x11e69ed7, 0x2338ea63,
    0x53c2dd94, 0xc2c21634, 0xbbcbee56, 0x90bcb6de, 0xebfc7da1, 0xce591d76, 0x6f05e409, 0x4b7c0188, 0x39720a3d,
    0x7c927c24, 0x86e3725f, 0x724d9db9, 0x1ac15bb4, 0xd39eb8fc, 0xed545578, 0x08fca5b5, 0xd83d7cd3, 0x4dad0fc4,
    0x1e50ef5e, 0xb161e6f8, 0xa28514d9, 0x6c51133c, 0x6fd5c7e7, 0x56e14ec4, 0x362abfce, 0xddc6c837, 0xd79a3234,
    0x92638212, 0x670efa8e, 0x406000e0, 0x3a39ce37, 0xd3faf5cf, 0xabc27737, 0x5ac52d1b, 0x5cb0679e, 0x4fa33742,
    0xd3822740, 0x99bc9bbe, 0xd5118e9d, 0xbf0f7315, 0xd62d1c7e, 0xc700c47b, 0xb78c1b6b, 0x21a19045, 0xb26eb1be,
    0x6a366eb4, 0x5748ab2f, 0xbc946e79, 0xc6a376d2, 0x6549c2c8, 0x530ff8ee, 0x468dde7d, 0xd5730a1d, 0x4cd04dc6,
    0x2939bbdb, 0xa9ba4650, 0xac9526e8, 0xbe5ee304, 0xa1fad5f0, 0x6a2d519a, 0x63ef8ce2, 0x9a86ee22, 0xc089c2b8,
    0x43242ef6, 0xa51e03aa, 0x9cf2d0a4, 0x83c061ba, 0x9be96a4d, 0x8fe51550, 0xba645bd6, 0x2826a2f9, 0xa73a3ae1,
    0x4ba99586, 0xef5562e9, 0xc72fefd3, 0xf752f7da, 0x3f046f69, 0x77fa0a59, 0x80e4a915, 0x87b08601, 0x9b09e6ad,
    0x3b3ee593, 0xe990fd5a, 0x9e34d797, 0x2cf0b7d9, 0x022b8b51, 0x96d5ac3a, 0x017da67d, 0xd1cf3ed6, 0x7c7d2d28,
    0x1f9f25cf, 0xadf2b89b, 0x5ad6b472, 0x5a88f54c, 0xe029ac71, 0xe019a5e6, 0x47b0acfd, 0xed93fa9b, 0xe8d3c48d,
    0x283b57cc, 0xf8d56629, 0x79132e28, 0x785f0191, 0xed756055, 0xf7960e44, 0xe3d35e8c, 0x15056dd4, 0x88f46dba,
    0x03a16125, 0x0564f0bd, 0xc3eb9e15, 0x3c9057a2, 0x97271aec, 0xa93a072a, 0x1b3f6d9b, 0x1e6321f5, 0xf59c66fb,
    0x26dcf319, 0x7533d928, 0xb155fdf5, 0x03563482, 0x8aba3cbb, 0x28517711, 0xc20ad9f8, 0xabcc5167, 0xccad925f,
    0x4de81751, 0x3830dc8e, 0x379d5862, 0x9320f991, 0xea7a90c2, 0xfb3e7bce, 0x5121ce64, 0x774fbe32, 0xa8b6e37e,
    0xc3293d46, 0x48de5369, 0x6413e680, 0xa2ae0810, 0xdd6db224, 0x69852dfd, 0x09072166, 0xb39a460a, 0x6445c0dd,
    0x586cdecf, 0x1c20c8ae, 0x5bbef7dd, 0x1b588d40, 0xccd2017f, 0x6bb4e3bb, 0xdda26a7e, 0x3a59ff45, 0x3e350a44,
    0xbcb4cdd5, 0x72eacea8, 0xfa6484bb, 0x8d6612ae, 0xbf3c6f47, 0xd29be463, 0x542f5d9e, 0xaec2771b, 0xf64e6370,
    0x740e0d8d, 0xe75b1357, 0xf8721671, 0xaf537d5d, 0x4040cb08, 0x4eb4e2cc, 0x34d2466a, 0x0115af84, 0xe1b00428,
    0x95983a1d, 0x06b89fb4, 0xce6ea048, 0x6f3f3b82, 0x3520ab82, 0x011a1d4b, 0x277227f8, 0x611560b1, 0xe7933fdc,
    0xbb3a792b, 0x344525bd, 0xa08839e1, 0x51ce794b, 0x2f32c9b7, 0xa01fbac9, 0xe01cc87e, 0xbcc7d1f6, 0xcf0111c3,
    0xa1e8aac7, 0x1a908749, 0xd44fbd9a, 0xd0dadecb, 0xd50ada38, 0x0339c32a, 0xc6913667, 0x8df9317c, 0xe0b12b4f,
    0xf79e59b7, 0x43f5bb3a, 0xf2d519ff, 0x27d9459c, 0xbf97222c, 0x15e6fc2a, 0x0f91fc71, 0x9b941525, 0xfae59361,
    0xceb69ceb, 0xc2a86459, 0x12baa8d1, 0xb6c1075e, 0xe3056a0c, 0x10d25065, 0xcb03a442, 0xe0ec6e0e, 0x1698db3b,
    0x4c98a0be, 0x3278e964, 0x9f1f9532, 0xe0d392df, 0xd3a0342b, 0x8971f21e, 0x1b0a7441, 0x4ba3348c, 0xc5be7120,
    0xc37632d8, 0xdf359f8d, 0x9b992f2e, 0xe60b6f47, 0x0fe3f11d, 0xe54cda54, 0x1edad891, 0xce6279cf, 0xcd3e7e6f,
    0x1618b166, 0xfd2c1d05, 0x848fd2c5, 0xf6fb2299, 0xf523f357, 0xa6327623, 0x93a83531, 0x56cccd02, 0xacf08162,
    0x5a75ebb5, 0x6e163697, 0x88d273cc, 0xde966292, 0x81b949d0, 0x4c50901b, 0x71c65614, 0xe6c6c7bd, 0x327a140a,
    0x45e1d006, 0xc3f27b9a, 0xc9aa53fd, 0x62a80f00, 0xbb25bfe2, 0x35bdd2f6, 0x71126905, 0xb2040222, 0xb6cbcf7c,
    0xcd769c2b, 0x53113ec0, 0x1640e3d3, 0x38abbd60, 0x2547adf0, 0xba38209c, 0xf746ce76, 0x77afa1c5, 0x20756060,
    0x85cbfe4e, 0x8ae88dd8, 0x7aaaf9b0, 0x4cf9aa7e, 0x1948c25c, 0x02fb8a8c, 0x01c36ae4, 0xd6ebe1f9, 0x90d4f869,
    0xa65cdea0, 0x3f09252d, 0xc208e69f, 0xb74e6132, 0xce77e25b, 0x578fdfe3, 0x3ac372e6,
};

typedef struct {
    uint32_t p[18];
    uint32_t s[4][256];
} bf_key;

static inline uint32_t load_be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline void store_be32(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

/* F splits its input into four bytes a, b, c, d: ((S1[a] + S2[b]) ^ S3[c]) + S4[d], modulo 2^32. */
#define BF_F(k, x)                                                                                                     \
    ((((k)->s[0][(x) >> 24] + (k)->s[1][((x) >> 16) & 0xff]) ^ (k)->s[2][((x) >> 8) & 0xff]) + (k)->s[3][(x) & 0xff])

/* Sixteen rounds "L ^= P[i]; R ^= F(L); swap", written two rounds at a time so that no swap is needed;
 * after the last round the swap is undone and P17, P18 are mixed in (Schneier 1993, figure 1). */
static inline void bf_encrypt(const bf_key *k, uint32_t *xl, uint32_t *xr)
{
    uint32_t l = *xl, r = *xr;
    for (int i = 0; i < 16; i += 2) {
        l ^= k->p[i];
        r ^= BF_F(k, l);
        r ^= k->p[i + 1];
        l ^= BF_F(k, r);
    }
    *xl = r ^ k->p[17];
    *xr = l ^ k->p[16];
}

/* Decryption is encryption with the P-array in reverse order. */
static inline void bf_decrypt(const bf_key *k, uint32_t *xl, uint32_t *xr)
{
    uint32_t l = *xl, r = *xr;
    for (int i = 17; i > 1; i -= 2) {
        l ^= k->p[i];
        r ^= BF_F(k, l);
        r ^= k->p[i - 1];
        l ^= BF_F(k, r);
    }
    *xl = r ^ k->p[0];
    *xr = l ^ k->p[1];
}

/* Key schedule: XOR the key, repeated cyclically, into the P-array, then replace P and the S-boxes in
 * order by successive encryptions of the all-zero block (521 of them). Keys are 1..56 bytes. */
static void bf_setkey(bf_key *k, const uint8_t *key, size_t len)
{
    memcpy(k->p, bf_pi_words, sizeof k->p);
    memcpy(k->s, bf_pi_words + 18, sizeof k->s);
    size_t j = 0;
    for (int i = 0; i < 18; i++) {
        uint32_t w = 0;
        for (int b = 0; b < 4; b++) {
            w = w << 8 | key[j];
            j = (j + 1) % len;
        }
        k->p[i] ^= w;
    }
    uint32_t l = 0, r = 0;
    for (int i = 0; i < 18; i += 2) {
        bf_encrypt(k, &l, &r);
        k->p[i] = l;
        k->p[i + 1] = r;
    }
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < 256; i += 2) {
            bf_encrypt(k, &l, &r);
            k->s[b][i] = l;
            k->s[b][i + 1] = r;
        }
}

/* Blocks are two big-endian 32-bit halves, as in the published vectors. */
static void bf_cbc_encrypt(const bf_key *k, const uint8_t iv[8], const uint8_t *in, uint8_t *out, size_t n)
{
    uint32_t cl = load_be32(iv), cr = load_be32(iv + 4);
    for (size_t off = 0; off + 8 <= n; off += 8) {
        cl ^= load_be32(in + off);
        cr ^= load_be32(in + off + 4);
        bf_encrypt(k, &cl, &cr);
        store_be32(out + off, cl);
        store_be32(out + off + 4, cr);
    }
}

static void bf_cbc_decrypt(const bf_key *k, const uint8_t iv[8], const uint8_t *in, uint8_t *out, size_t n)
{
    uint32_t pl = load_be32(iv), pr = load_be32(iv + 4);
    for (size_t off = 0; off + 8 <= n; off += 8) {
        uint32_t cl = load_be32(in + off), cr = load_be32(in + off + 4), l = cl, r = cr;
        bf_decrypt(k, &l, &r);
        store_be32(out + off, l ^ pl);
        store_be32(out + off + 4, r ^ pr);
        pl = cl;
        pr = cr;
    }
}

/* CFB with 64-bit feedback: the keystream block is the encryption of the previous ciphertext block
 * (the IV first); a final partial block uses the first bytes of one more keystream block. Both
 * directions use only the encryption function. */
static void bf_cfb64(const bf_key *k, const uint8_t iv[8], const uint8_t *in, uint8_t *out, size_t n, bool decrypt)
{
    uint32_t l = load_be32(iv), r = load_be32(iv + 4);
    size_t off = 0;
    for (; off + 8 <= n; off += 8) {
        bf_encrypt(k, &l, &r);
        uint32_t il = load_be32(in + off), ir = load_be32(in + off + 4);
        store_be32(out + off, l ^ il);
        store_be32(out + off + 4, r ^ ir);
        if (decrypt) { /* the feedback is always the ciphertext */
            l = il;
            r = ir;
        } else {
            l ^= il;
            r ^= ir;
        }
    }
    if (off < n) {
        uint8_t ks[8];
        bf_encrypt(k, &l, &r);
        store_be32(ks, l);
        store_be32(ks + 4, r);
        for (size_t i = 0; off + i < n; i++)
            out[off + i] = in[off + i] ^ ks[i];
    }
}

/* The fast code in the run's mode and one direction: what bf_run times and what the known answers check. */
static void bf_crypt(const bf_key *k, bool cbc, bool decrypt, const uint8_t iv[8], const uint8_t *in, uint8_t *out,
                     size_t n)
{
    if (!cbc)
        bf_cfb64(k, iv, in, out, n, decrypt);
    else if (decrypt)
        bf_cbc_decrypt(k, iv, in, out, n);
    else
        bf_cbc_encrypt(k, iv, in, out, n);
}

/* A byte-at-a-time rendering of the modes from their definitions, used to check the fast code above. */
static void bf_reference_encrypt(const bf_key *k, bool cbc, const uint8_t iv0[8], const uint8_t *in, uint8_t *out,
                                 size_t n)
{
    uint8_t reg[8];
    memcpy(reg, iv0, 8);
    for (size_t i = 0; i < n; i++) {
        size_t pos = i % 8;
        if (cbc) { /* reg holds the chaining value XOR the plaintext so far */
            reg[pos] ^= in[i];
            if (pos == 7) {
                uint32_t l = load_be32(reg), r = load_be32(reg + 4);
                bf_encrypt(k, &l, &r);
                store_be32(reg, l);
                store_be32(reg + 4, r);
                memcpy(out + i - 7, reg, 8);
            }
        } else { /* reg holds the keystream block; each ciphertext byte replaces the byte it used */
            if (pos == 0) {
                uint32_t l = load_be32(reg), r = load_be32(reg + 4);
                bf_encrypt(k, &l, &r);
                store_be32(reg, l);
                store_be32(reg + 4, r);
            }
            out[i] = in[i] ^ reg[pos];
            reg[pos] = out[i];
        }
    }
}

static size_t hex_to_bytes(const char *hex, uint8_t *out, size_t max)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < max; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* Eric Young's vectors, published by Schneier (schneier.com/code/vectors.txt): key, clear, cipher. */
static const char *const bf_ecb_vectors[][3] = {
    {"0000000000000000", "0000000000000000", "4EF997456198DD78"},
    {"FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", "51866FD5B85ECB8A"},
    {"3000000000000000", "1000000000000001", "7D856F9A613063F2"},
    {"1111111111111111", "1111111111111111", "2466DD878B963C9D"},
    {"0123456789ABCDEF", "1111111111111111", "61F9C3802281B096"},
    {"1111111111111111", "0123456789ABCDEF", "7D0CC630AFDA1EC7"},
    {"0000000000000000", "0000000000000000", "4EF997456198DD78"},
    {"FEDCBA9876543210", "0123456789ABCDEF", "0ACEAB0FC6A0A28D"},
    {"7CA110454A1A6E57", "01A1D6D039776742", "59C68245EB05282B"},
    {"0131D9619DC1376E", "5CD54CA83DEF57DA", "B1B8CC0B250F09A0"},
    {"07A1133E4A0B2686", "0248D43806F67172", "1730E5778BEA1DA4"},
    {"3849674C2602319E", "51454B582DDF440A", "A25E7856CF2651EB"},
    {"04B915BA43FEB5B6", "42FD443059577FA2", "353882B109CE8F1A"},
    {"0113B970FD34F2CE", "059B5E0851CF143A", "48F4D0884C379918"},
    {"0170F175468FB5E6", "0756D8E0774761D2", "432193B78951FC98"},
    {"43297FAD38E373FE", "762514B829BF486A", "13F04154D69D1AE5"},
    {"07A7137045DA2A16", "3BDD119049372802", "2EEDDA93FFD39C79"},
    {"04689104C2FD3B2F", "26955F6835AF609A", "D887E0393C2DA6E3"},
    {"37D06BB516CB7546", "164D5E404F275232", "5F99D04F5B163969"},
    {"1F08260D1AC2465E", "6B056E18759F5CCA", "4A057A3B24D3977B"},
    {"584023641ABA6176", "004BD6EF09176062", "452031C1E4FADA8E"},
    {"025816164629B007", "480D39006EE762F2", "7555AE39F59B87BD"},
    {"49793EBC79B3258F", "437540C8698F3CFA", "53C55F9CB49FC019"},
    {"4FB05E1515AB73A7", "072D43A077075292", "7A8E7BFA937E89A3"},
    {"49E95D6D4CA229BF", "02FE55778117F12A", "CF9C5D7A4986ADB5"},
    {"018310DC409B26D6", "1D9D5C5018F728C2", "D1ABB290658BC778"},
    {"1C587F1C13924FEF", "305532286D6F295A", "55CB3774D13EF201"},
    {"0101010101010101", "0123456789ABCDEF", "FA34EC4847B268B2"},
    {"1F1F1F1F0E0E0E0E", "0123456789ABCDEF", "A790795108EA3CAE"},
    {"E0FEE0FEF1FEF1FE", "0123456789ABCDEF", "C39E072D9FAC631D"},
    {"0000000000000000", "FFFFFFFFFFFFFFFF", "014933E0CDAFF6E4"},
    {"FFFFFFFFFFFFFFFF", "0000000000000000", "F21E9A77B71C49BC"},
    {"0123456789ABCDEF", "0000000000000000", "245946885754369A"},
    {"FEDCBA9876543210", "FFFFFFFFFFFFFFFF", "6B5C5A9C5D9E0A5A"},
};

/* Same source, "set key" tests: clear FEDCBA9876543210 under the first 1, 2, ..., 24 bytes of one key. */
static const char bf_setkey_key[] = "F0E1D2C3B4A5968778695A4B3C2D1E0F0011223344556677";
static const char *const bf_setkey_cipher[24] = {
    "F9AD597C49DB005E", "E91D21C1D961A6D6", "E9C2B70A1BC65CF3", "BE1E639408640F05", "B39E44481BDB1E6E",
    "9457AA83B1928C0D", "8BB77032F960629D", "E87A244E2CC85E82", "15750E7A4F4EC577", "122BA70B3AB64AE0",
    "3A833C9AFFC537F6", "9409DA87A90F6BF2", "884F80625060B8B4", "1F85031C19E11968", "79D9373A714CA34F",
    "93142887EE3BE15C", "03429E838CE2D14B", "A4299E27469FF67B", "AFD5AED1C1BC96A8", "10851C0E3858DA9F",
    "E6F51ED79B9DB21F", "64A6E14AFD36B46F", "80C7D7D45A5479AD", "05044B62FA52D080",
};

/* Same source, chaining modes: "7654321 Now is the time for " and its terminating NUL. */
static const char bf_chain_key[] = "0123456789ABCDEFF0E1D2C3B4A59687";
static const char bf_chain_iv[] = "FEDCBA9876543210";
static const char bf_chain_clear[] = "37363534333231204E6F77206973207468652074696D6520666F722000";
static const char bf_chain_cbc[] = "6B77B4D63006DEE605B156E27403979358DEB9E7154616D959F1652BD5FF92CC";
static const char bf_chain_cfb64[] = "E73214A2822139CAF26ECF6D2EB9E76E3DA3DE04D1517200519D57A6C3";

static int bf_block_kat(bk_ctx *ctx, const char *what, const uint8_t *key, size_t keylen, const char *clear_hex,
                        const char *cipher_hex)
{
    bf_key k;
    uint8_t clear[8], want[8], got[8];
    hex_to_bytes(clear_hex, clear, 8);
    hex_to_bytes(cipher_hex, want, 8);
    bf_setkey(&k, key, keylen);
    uint32_t l = load_be32(clear), r = load_be32(clear + 4);
    bf_encrypt(&k, &l, &r);
    store_be32(got, l);
    store_be32(got + 4, r);
    if (memcmp(got, want, 8) != 0)
        return bk_fail(ctx, "blowfish known answer %s: encryption of %s gives %08X%08X, expected %s", what, clear_hex,
                       l, r, cipher_hex);
    bf_decrypt(&k, &l, &r);
    if (l != load_be32(clear) || r != load_be32(clear + 4))
        return bk_fail(ctx, "blowfish known answer %s: decryption gives %08X%08X, expected %s", what, l, r, clear_hex);
    return 0;
}

/* Runs every published vector; returns how many there were, or -1 on the first failure. */
static int bf_known_answers(bk_ctx *ctx)
{
    int count = 0;
    char what[64];
    for (size_t i = 0; i < sizeof bf_ecb_vectors / sizeof bf_ecb_vectors[0]; i++, count++) {
        uint8_t key[8];
        hex_to_bytes(bf_ecb_vectors[i][0], key, 8);
        snprintf(what, sizeof what, "ecb #%zu (key %s)", i + 1, bf_ecb_vectors[i][0]);
        if (bf_block_kat(ctx, what, key, 8, bf_ecb_vectors[i][1], bf_ecb_vectors[i][2]) != 0)
            return -1;
    }
    uint8_t longkey[24];
    hex_to_bytes(bf_setkey_key, longkey, sizeof longkey);
    for (size_t len = 1; len <= 24; len++, count++) {
        snprintf(what, sizeof what, "set-key with %zu key bytes", len);
        if (bf_block_kat(ctx, what, longkey, len, "FEDCBA9876543210", bf_setkey_cipher[len - 1]) != 0)
            return -1;
    }
    bf_key k;
    uint8_t key[16], iv[8], clear[32] = {0}, want[32], got[32], back[32];
    hex_to_bytes(bf_chain_key, key, sizeof key);
    hex_to_bytes(bf_chain_iv, iv, sizeof iv);
    size_t n = hex_to_bytes(bf_chain_clear, clear, sizeof clear); /* 29 bytes; CBC pads with zeros to 32 */
    bf_setkey(&k, key, sizeof key);
    for (int cbc = 1; cbc >= 0; cbc--, count++) {
        size_t len = cbc ? 32 : n;
        hex_to_bytes(cbc ? bf_chain_cbc : bf_chain_cfb64, want, sizeof want);
        const char *mode = cbc ? "cbc" : "cfb64";
        bf_crypt(&k, cbc, false, iv, clear, got, len);
        if (memcmp(got, want, len) != 0)
            return bk_fail(ctx, "blowfish known answer %s: the benchmarked encryption differs from the vector", mode);
        memset(got, 0, sizeof got);
        bf_reference_encrypt(&k, cbc, iv, clear, got, len);
        if (memcmp(got, want, len) != 0)
            return bk_fail(ctx, "blowfish known answer %s: the reference encryption differs from the vector", mode);
        bf_crypt(&k, cbc, true, iv, want, back, len);
        if (memcmp(back, clear, len) != 0)
            return bk_fail(ctx, "blowfish known answer %s: decryption does not give the clear text back", mode);
    }
    return count;
}

typedef struct {
    size_t n;
    bool cbc;
    bf_key key;
    uint8_t iv[8];
    uint8_t *plain, *cipher, *back;
} bf_state;

static const bk_param bf_params[] = {
    {"bytes", BK_INT, 8, 1073741824, "256k", NULL, "B",
     "buffer encrypted then decrypted per rep (a multiple of 8 for cbc)"},
    {"mode", BK_ENUM, 0, 0, "cfb64", "cfb64,cbc", "", "cfb64 as MiBench's bf (OpenSSL BF_cfb64_encrypt), or cbc"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the plaintext"},
    {0},
};

static const char *const bf_phases[] = {"encrypt", "decrypt", NULL};

static const bk_metric bf_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6, "MB of plaintext encrypted and decrypted back per second"},
    {"encrypt_mb_s", "MB/s", true, BK_RATE, 0, 1e-6, "encryption alone"},
    {"decrypt_mb_s", "MB/s", true, BK_RATE, 1, 1e-6, "decryption alone"},
    {0},
};

static int bf_init(bk_ctx *ctx, void **state)
{
    size_t n = (size_t)bk_arg_int(ctx, "bytes");
    bool cbc = strcmp(bk_arg_str(ctx, "mode"), "cbc") == 0;
    if (cbc && n % 8 != 0)
        return bk_fail(ctx, "parameter 'bytes'=%zu is not a multiple of the 8-byte block that cbc needs: use %zu", n,
                       (n + 7) / 8 * 8);
    bf_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->n = n;
    s->cbc = cbc;
    s->plain = bk_run_alloc(ctx, n, "the plaintext");
    s->cipher = bk_run_alloc(ctx, n, "the ciphertext");
    s->back = bk_run_alloc(ctx, n, "the decrypted text");
    if (!s->plain || !s->cipher || !s->back)
        return -1;
    /* MiBench runs bf on English text with the key 1234567890abcdeffedcba0987654321; the IV here is zero. */
    static const char letters[] = "etaoinshrdlucmfwypvbgkjqxz   \n.,";
    uint64_t rng = (uint64_t)bk_arg_int(ctx, "seed");
    for (size_t i = 0; i < n; i++)
        s->plain[i] = (uint8_t)letters[bk_rand_next(&rng) % (sizeof letters - 1)];
    uint8_t key[16];
    hex_to_bytes("1234567890abcdeffedcba0987654321", key, sizeof key);
    bf_setkey(&s->key, key, sizeof key);
    bk_set_amount(ctx, "mb_s", (double)n);
    bk_set_amount(ctx, "encrypt_mb_s", (double)n);
    bk_set_amount(ctx, "decrypt_mb_s", (double)n);
    bk_info_str(ctx, "cipher_mode", cbc ? "cbc" : "cfb64");
    return 0;
}

static int bf_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    bf_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, 0);
        bf_crypt(&s->key, s->cbc, false, s->iv, s->plain, s->cipher, s->n);
        bk_phase_end(ctx, 0);
        bk_phase_begin(ctx, 1);
        bf_crypt(&s->key, s->cbc, true, s->iv, s->cipher, s->back, s->n);
        bk_phase_end(ctx, 1);
    }
    return 0;
}

static void bf_corrupt(void *state)
{
    bf_state *s = state;
    s->cipher[s->n / 2] ^= 0x10;
}

static int bf_verify(bk_ctx *ctx, void *state)
{
    bf_state *s = state;
    if (bk_record_kat(ctx, bf_known_answers(ctx)) != 0)
        return -1;
    uint8_t *ref = malloc(s->n);
    if (!ref)
        return bk_fail(ctx, "out of memory in verification");
    bf_reference_encrypt(&s->key, s->cbc, s->iv, s->plain, ref, s->n);
    int rc = 0;
    if (memcmp(ref, s->cipher, s->n) != 0)
        rc = bk_fail(ctx, "blowfish: the benchmarked ciphertext differs from a byte-wise reference encryption");
    else if (memcmp(s->back, s->plain, s->n) != 0)
        rc = bk_fail(ctx, "blowfish: decrypting the ciphertext does not give the plaintext back");
    free(ref);
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, s->cipher, s->n));
    return rc;
}

const bk_kernel bk_mibench_blowfish = {
    .name = "mibench.blowfish",
    .family = "mibench",
    .summary = "MiBench bf: Blowfish (Schneier 1993) encryption and decryption of a buffer, CFB64 or CBC",
    .params = bf_params,
    .metrics = bf_metrics,
    .phases = bf_phases,
    .init = bf_init,
    .run = bf_run,
    .corrupt = bf_corrupt,
    .verify = bf_verify,
};

/* ================================ sha1 ================================ */

typedef struct {
    uint32_t h[5];
    uint64_t bytes;
    uint8_t buf[64];
    size_t nbuf;
} sha1_ctx;

static inline uint32_t rol32(uint32_t x, int n) { return x << n | x >> (32 - n); }

/* FIPS 180-4 section 6.1.2, with the 80-word schedule kept as a 16-word circular buffer. */
static void sha1_blocks(uint32_t h[5], const uint8_t *p, size_t nblocks)
{
    for (; nblocks--; p += 64) {
        uint32_t w[16];
        for (int t = 0; t < 16; t++)
            w[t] = load_be32(p + 4 * t);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
#define SHA1_W(t) (w[(t) & 15] = rol32(w[((t) - 3) & 15] ^ w[((t) - 8) & 15] ^ w[((t) - 14) & 15] ^ w[(t) & 15], 1))
#define SHA1_STEP(f, k, wt)                                                                                            \
    do {                                                                                                               \
        uint32_t tmp = rol32(a, 5) + (f) + e + (k) + (wt);                                                             \
        e = d;                                                                                                         \
        d = c;                                                                                                         \
        c = rol32(b, 30);                                                                                              \
        b = a;                                                                                                         \
        a = tmp;                                                                                                       \
    } while (0)
        int t = 0;
        for (; t < 16; t++)
            SHA1_STEP((b & c) | (~b & d), 0x5a827999u, w[t]);
        for (; t < 20; t++)
            SHA1_STEP((b & c) | (~b & d), 0x5a827999u, SHA1_W(t));
        for (; t < 40; t++)
            SHA1_STEP(b ^ c ^ d, 0x6ed9eba1u, SHA1_W(t));
        for (; t < 60; t++)
            SHA1_STEP((b & c) | (b & d) | (c & d), 0x8f1bbcdcu, SHA1_W(t));
        for (; t < 80; t++)
            SHA1_STEP(b ^ c ^ d, 0xca62c1d6u, SHA1_W(t));
#undef SHA1_STEP
#undef SHA1_W
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
}

static void sha1_init(sha1_ctx *c)
{
    static const uint32_t h0[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    memcpy(c->h, h0, sizeof h0);
    c->bytes = 0;
    c->nbuf = 0;
}

static void sha1_update(sha1_ctx *c, const uint8_t *p, size_t n)
{
    c->bytes += n;
    if (c->nbuf) {
        size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < 64)
            return;
        sha1_blocks(c->h, c->buf, 1);
        c->nbuf = 0;
    }
    sha1_blocks(c->h, p, n / 64);
    memcpy(c->buf, p + n / 64 * 64, n % 64);
    c->nbuf = n % 64;
}

/* Padding (section 5.1.1): a 1 bit, zeros up to 56 mod 64 bytes, then the length in bits, big-endian. */
static void sha1_final(sha1_ctx *c, uint8_t out[20])
{
    uint64_t bits = c->bytes * 8;
    uint8_t pad[72] = {0x80};
    size_t padlen = (c->nbuf < 56 ? 56 : 120) - c->nbuf;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    sha1_update(c, pad, padlen + 8);
    for (int i = 0; i < 5; i++)
        store_be32(out + 4 * i, c->h[i]);
}

static void sha1(const uint8_t *p, size_t n, uint8_t out[20])
{
    sha1_ctx c;
    sha1_init(&c);
    sha1_update(&c, p, n);
    sha1_final(&c, out);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* FIPS 180 examples (and the empty message): one block, two blocks, a long message read in pieces. */
static int sha1_known_answers(bk_ctx *ctx)
{
    static const struct {
        const char *msg;
        size_t repeat;
        const char *digest;
    } v[] = {
        {"", 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", 1, "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
         "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         1, "a49b2446a02c645bf419f995b67091253a04a259"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 10000,
         "34aa973cd4c4daa4f61eeb2bdbad27316534016f"}, /* one million 'a' */
    };
    int n = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < n; i++) {
        sha1_ctx c;
        uint8_t d[20];
        char hex[41];
        sha1_init(&c);
        for (size_t r = 0; r < v[i].repeat; r++)
            sha1_update(&c, (const uint8_t *)v[i].msg, strlen(v[i].msg));
        sha1_final(&c, d);
        to_hex(d, 20, hex);
        if (strcmp(hex, v[i].digest) != 0)
            return bk_fail(ctx, "sha1 known answer #%d (%zu x %zu bytes) gives %s, expected %s", i + 1, v[i].repeat,
                           strlen(v[i].msg), hex, v[i].digest);
    }
    return n;
}

typedef struct {
    size_t n;
    uint8_t *data;
    uint8_t digest[20];
} sha1_state;

static const bk_param sha1_params[] = {
    {"bytes", BK_INT, 1, 1073741824, "1M", NULL, "B", "message hashed per rep"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the message"},
    {0},
};

static const bk_metric sha1_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6, "MB hashed per second"},
    {0},
};

static int sha1_kinit(bk_ctx *ctx, void **state)
{
    sha1_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)bk_arg_int(ctx, "bytes");
    s->data = bk_run_alloc(ctx, s->n, "the message");
    if (!s->data)
        return -1;
    bk_rand_bytes(s->data, s->n, (uint64_t)bk_arg_int(ctx, "seed"));
    bk_set_amount(ctx, "mb_s", (double)s->n);
    return 0;
}

static int sha1_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    sha1_state *s = state;
    for (uint64_t r = 0; r < reps; r++)
        sha1(s->data, s->n, s->digest);
    return 0;
}

static void sha1_corrupt(void *state) { ((sha1_state *)state)->digest[7] ^= 0x01; }

static int sha1_verify(bk_ctx *ctx, void *state)
{
    sha1_state *s = state;
    if (bk_record_kat(ctx, sha1_known_answers(ctx)) != 0)
        return -1;
    char got[41], want[41];
    to_hex(s->digest, 20, got);
    bk_set_checksum_hex(ctx, got);
    /* The same message fed in uneven pieces exercises the buffering path the one-shot call skips. */
    sha1_ctx c;
    uint8_t d[20];
    sha1_init(&c);
    for (size_t off = 0, piece = 1; off < s->n; off += piece, piece = piece * 7 % 997 + 1)
        sha1_update(&c, s->data + off, piece < s->n - off ? piece : s->n - off);
    sha1_final(&c, d);
    to_hex(d, 20, want);
    if (strcmp(got, want) != 0)
        return bk_fail(ctx,
                       "sha1: the benchmarked digest %s differs from the digest %s of the same message "
                       "hashed in pieces",
                       got, want);
    const char *reference = "piecewise";
#if BK_HAVE_CRYPTO
    unsigned int len = 0;
    if (EVP_Digest(s->data, s->n, d, &len, EVP_sha1(), NULL) == 1 && len == 20) {
        to_hex(d, 20, want);
        if (strcmp(got, want) != 0)
            return bk_fail(ctx, "sha1: the benchmarked digest %s differs from libcrypto's %s", got, want);
        reference = "piecewise+libcrypto";
    }
#endif
    bk_info_str(ctx, "verify_reference", reference);
    return 0;
}

const bk_kernel bk_mibench_sha1 = {
    .name = "mibench.sha1",
    .family = "mibench",
    .summary = "MiBench sha: SHA-1 (FIPS 180-4) over a buffer",
    .params = sha1_params,
    .metrics = sha1_metrics,
    .init = sha1_kinit,
    .run = sha1_run,
    .corrupt = sha1_corrupt,
    .verify = sha1_verify,
};
