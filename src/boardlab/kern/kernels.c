/* The catalog: one line per kernel. A kernel family adds its descriptors here and its file to meson.build. */
#include "core_internal.h"

extern const bk_kernel bk_noop;
extern const bk_kernel bk_scimark_fft;
extern const bk_kernel bk_scimark_sor;
extern const bk_kernel bk_scimark_mc;
extern const bk_kernel bk_scimark_sparse;
extern const bk_kernel bk_scimark_lu;
extern const bk_kernel bk_scimark_composite;
extern const bk_kernel bk_mibench_gsm;
extern const bk_kernel bk_mibench_dijkstra;
extern const bk_kernel bk_mibench_patricia;
extern const bk_kernel bk_mibench_blowfish;
extern const bk_kernel bk_mibench_sha1;
extern const bk_kernel bk_mibench_crc32;
extern const bk_kernel bk_mibench_adpcm;
extern const bk_kernel bk_mibench_fft;
extern const bk_kernel bk_compress_lzma;
extern const bk_kernel bk_compress_bzip2;
extern const bk_kernel bk_compress_zstd;
extern const bk_kernel bk_compress_zlib;
extern const bk_kernel bk_crypto_evp;
extern const bk_kernel bk_crypto_afalg;
extern const bk_kernel bk_crypto_rng;
extern const bk_kernel bk_mem_latency;
extern const bk_kernel bk_mem_bandwidth;
extern const bk_kernel bk_compute_gemm;
extern const bk_kernel bk_compute_linpack;
extern const bk_kernel bk_io_storage;
extern const bk_kernel bk_io_net;
extern const bk_kernel bk_stream_pipeline;
extern const bk_kernel bk_svc_pub;
extern const bk_kernel bk_svc_sub;
extern const bk_kernel bk_svc_mgmt;
extern const bk_kernel bk_svc_nmea;
extern const bk_kernel bk_svc_load;
extern const bk_kernel bk_clock_chain;

const bk_kernel *const bk_kernels[] = {
    &bk_noop,
    &bk_scimark_fft,
    &bk_scimark_sor,
    &bk_scimark_mc,
    &bk_scimark_sparse,
    &bk_scimark_lu,
    &bk_scimark_composite,
    &bk_mibench_gsm,
    &bk_mibench_dijkstra,
    &bk_mibench_patricia,
    &bk_mibench_blowfish,
    &bk_mibench_sha1,
    &bk_mibench_crc32,
    &bk_mibench_adpcm,
    &bk_mibench_fft,
    &bk_compress_lzma,
    &bk_compress_bzip2,
    &bk_compress_zstd,
    &bk_compress_zlib,
    &bk_crypto_evp,
    &bk_crypto_afalg,
    &bk_crypto_rng,
    &bk_mem_latency,
    &bk_mem_bandwidth,
    &bk_compute_gemm,
    &bk_compute_linpack,
    &bk_io_storage,
    &bk_io_net,
    &bk_stream_pipeline,
    &bk_svc_pub,
    &bk_svc_sub,
    &bk_svc_mgmt,
    &bk_svc_nmea,
    &bk_svc_load,
    &bk_clock_chain,
    NULL,
};
