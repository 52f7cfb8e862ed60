#!/usr/bin/env python3
"""Prints N distinct TCP ports of 127.0.0.1 that are free now, for tests that start servers.

The ports come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from
which it hands out ports to outgoing connections and to bind(port 0): a port picked with
bind(0) and released can be taken at once by any client connecting anywhere (every gRPC
channel of every test running beside this one), before our server binds it. Below the range
only another process choosing a fixed port can take it. Each candidate is bound (and held
until all are chosen, so they differ); when the range leaves too little room below it, the
kernel's bind(0) is used instead.

Usage: free_ports.py [N]   (default 1)
"""
import random
import socket
import sys

LOWEST = 10000


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    high = ephemeral_low() - 1
    held, ports = [], []
    rng = random.SystemRandom()
    for _ in range(200 * count if high - LOWEST >= 1000 else 0):
        if len(ports) == count:
            break
        port = rng.randint(LOWEST, high)
        if port in ports:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        held.append(s)
        ports.append(port)
    while len(ports) < count:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        held.append(s)
        ports.append(s.getsockname()[1])
    print(" ".join(str(p) for p in ports))


if __name__ == "__main__":
    main()
