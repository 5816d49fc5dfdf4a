import socket, sys, time, threading
role = sys.argv[1]
if role == "server":
    def udp(fam, addr, port):
        s = socket.socket(fam, socket.SOCK_DGRAM); s.bind((addr, port))
        while True:
            d, a = s.recvfrom(2048); s.sendto(b"pong:" + d, a)
    def tcp(port):
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("10.0.0.2", port)); s.listen(8)
        while True:
            c, _ = s.accept(); c.sendall(b"hello\n"); c.recv(100); time.sleep(30)
    for t in [lambda: udp(socket.AF_INET, "10.0.0.2", 5353), lambda: udp(socket.AF_INET6, "fd00:ab::2", 5353), lambda: udp(socket.AF_INET, "10.0.0.2", 9999), lambda: tcp(8443)]:
        threading.Thread(target=t, daemon=True).start()
    time.sleep(40)
else:
    def q(fam, addr, port, src=None):
        s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(2)
        if src: s.bind(src)
        s.sendto(b"query", (addr, port))
        try: print(s.recvfrom(100)[0])
        except Exception as e: print("no reply", e)
    q(socket.AF_INET, "10.96.0.10", 53, ("10.0.0.1", 40001))
    q(socket.AF_INET, "10.96.0.10", 53, ("10.0.0.1", 40002))
    q(socket.AF_INET6, "fd00:10:96::a", 53, ("fd00:ab::1", 40003))
    q(socket.AF_INET, "10.0.0.2", 9999, ("10.0.0.1", 40004))
    q(socket.AF_INET, "10.0.0.2", 7, ("10.0.0.1", 40005))   # nothing listens: unreplied
    c = socket.create_connection(("10.96.0.1", 443), source_address=("10.0.0.1", 40010)); print(c.recv(10)); c.sendall(b"x")
    c2 = socket.create_connection(("10.96.0.1", 443), source_address=("10.0.0.1", 40011)); c2.recv(10); c2.close()
    s = socket.socket(); s.settimeout(1)
    try: s.connect(("10.0.0.2", 9))   # RST
    except Exception as e: print("refused", e)
    # ICMP echo via raw socket
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    import struct
    def csum(b):
        s = sum(struct.unpack("!%dH" % (len(b)//2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16; return (~s) & 0xffff
    hdr = struct.pack("!BBHHH", 8, 0, 0, 0x1234, 1) + b"pingdata"
    hdr = struct.pack("!BBHHH", 8, 0, csum(hdr), 0x1234, 1) + b"pingdata"
    r.sendto(hdr, ("10.0.0.2", 0)); r.settimeout(2)
    try: r.recvfrom(100); print("pong")
    except Exception as e: print("no icmp reply", e)
    time.sleep(1)
