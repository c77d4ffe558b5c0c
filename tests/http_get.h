// A minimal HTTP client for tests that scrape our endpoints (/metrics).
#ifndef PS_TESTS_HTTP_GET_H_
#define PS_TESTS_HTTP_GET_H_

#include <string>

namespace ps::testing {

// Sends `request` as is to 127.0.0.1:<port> and returns everything the
// server answers until it closes the connection; "" when it cannot connect
// or send.
std::string HttpRaw(int port, const std::string& request);

// GET http://127.0.0.1:<port><path> over a plain socket (HTTP/1.0, so the
// server closes the connection after the body). Returns the whole response,
// status line and headers included, or "" when it cannot connect or send.
std::string HttpGet(int port, const std::string& path);

}  // namespace ps::testing

#endif  // PS_TESTS_HTTP_GET_H_
