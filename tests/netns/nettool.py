#!/usr/bin/env python3
"""Small network endpoints for the harness's own tests, run inside test hosts.

  nettool.py echo-server PORT           TCP echo on 0.0.0.0:PORT (prints "listening")
  nettool.py session HOST PORT          connects, prints "connected" or "error ERRNO";
                                        then per stdin line "send": one 64-byte echo
                                        with a 1 s timeout -> "ok RTT_US" | "timeout" |
                                        "error ERRNO"; "connect": a new connection
                                        (same answers)
  nettool.py udp-count PORT SECONDS     counts datagrams on PORT until SECONDS of quiet
                                        after the first (prints "listening", then N)
  nettool.py udp-send HOST PORT N       sends N datagrams, 200 us apart
"""

import errno
import socket
import sys
import threading
import time

TIMEOUT_S = 1.0
SO_RCVBUFFORCE = 33  # <asm-generic/socket.h>; not in Python's socket module


def echo_server(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(16)
    print("listening", flush=True)
    def serve(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def _errname(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def _connect(host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(TIMEOUT_S)
    try:
        sock.connect((host, port))
        return sock, "connected"
    except socket.timeout:
        sock.close()
        return None, "timeout"
    except OSError as e:
        sock.close()
        return None, f"error {_errname(e)}"


def _echo(sock):
    payload = b"x" * 64
    start = time.perf_counter()
    try:
        sock.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = sock.recv(len(payload) - len(got))
            if not chunk:
                return "error EOF"
            got += chunk
        return f"ok {int((time.perf_counter() - start) * 1e6)}"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return f"error {_errname(e)}"


def session(host, port):
    sock, result = _connect(host, port)
    print(result, flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "send":
            result = _echo(sock) if sock else "error ENOTCONN"
            if result == "timeout":
                # The bytes may still arrive later; a new "send" must not read them.
                sock.close()
                sock = None
        elif cmd == "connect":
            if sock:
                sock.close()
            sock, result = _connect(host, port)
        else:
            result = f"error unknown command {cmd!r}"
        print(result, flush=True)


def udp_count(port, quiet_s):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Room for every datagram even while this process is not scheduled (root only).
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    sock.bind(("0.0.0.0", port))
    print("listening", flush=True)
    sock.settimeout(None)
    sock.recv(2048)
    count = 1
    sock.settimeout(quiet_s)
    try:
        while True:
            sock.recv(2048)
            count += 1
    except socket.timeout:
        pass
    print(count, flush=True)


def udp_send(host, port, n):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(n):
        sock.sendto(i.to_bytes(4, "little") * 16, (host, port))
        time.sleep(0.0002)


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "echo-server":
        echo_server(int(args[0]))
    elif cmd == "session":
        session(args[0], int(args[1]))
    elif cmd == "udp-count":
        udp_count(int(args[0]), float(args[1]))
    elif cmd == "udp-send":
        udp_send(args[0], int(args[1]), int(args[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
