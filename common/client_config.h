// Settings of a client's connections (the YAML "client:" and "tls:"
// sections), part of what the client SDK's public header needs.
//
// Plain data.
#ifndef PS_COMMON_CLIENT_CONFIG_H_
#define PS_COMMON_CLIENT_CONFIG_H_

#include <cstdint>
#include <string>

namespace ps {

struct TlsConfig {
  bool enabled = false;
  std::string cert_file;       // this process's certificate (PEM)
  std::string key_file;        // its private key (PEM)
  std::string ca_file;         // CA that signs peers' certificates
  bool require_client_cert = false;  // mutual TLS
  std::string server_name_override;  // clients: expected name in the server cert
};

// The most often a server accepts keepalive pings from a client (and so the
// smallest client.keepalive_ms).
inline constexpr int64_t kMinKeepaliveMs = 1000;

struct ClientConfig {
  // Dense and sparse requests are cut into chunks of at most this many bytes.
  // 512 KiB: a 1 MiB op travels as two pipelined halves (1 MiB p50 -25-30%;
  // 16-64 MiB unchanged within the noise; tests/bench/TRANSPORT_RESULTS.md,
  // round 7). On a link slower than the CPUs, smaller chunks win: 128 KiB
  // took a 1 MiB push-pull on 1 Gbit/s from 0.69 to 0.95 of the link (round
  // 11), while on loopback 256 KiB cost 1.6x the client CPU per op.
  int64_t chunk_bytes = 512 << 10;
  int64_t rpc_timeout_ms = 30000;  // control RPCs and the handshake
  int64_t heartbeat_interval_ms = 1000;
  int64_t reconnect_initial_backoff_ms = 100;
  int64_t reconnect_max_backoff_ms = 5000;
  int64_t max_reconnect_attempts = 20;  // then requests fail UNAVAILABLE
  // HTTP/2 keepalive: a connection with calls open is pinged after this long
  // without traffic and dropped (then reconnected, requests resent) when no
  // answer comes within keepalive_timeout_ms: a silent network partition is
  // noticed in seconds, not when TCP gives up. 0 = off; else >= 1000 (the
  // servers accept pings that often).
  int64_t keepalive_ms = 10000;
  int64_t keepalive_timeout_ms = 5000;
};

}  // namespace ps

#endif  // PS_COMMON_CLIENT_CONFIG_H_
