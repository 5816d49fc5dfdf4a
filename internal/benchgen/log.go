package benchgen

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"
)

// WriteLog writes a kube-proxy log of at least size bytes, as kubectl logs
// prints it (bare klog lines), with timestamps increasing from 5 December
// 10:00: an iptables proxier syncing its rules every second, Services and
// endpoints changing in between, a reflector's watch lost now and then, and
// a failed iptables-restore (three lines) every 2,000 syncs.
func WriteLog(w io.Writer, size int64) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countWriter{w: bw}
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	header := func(sev byte, at time.Time, src string) {
		fmt.Fprintf(cw, "%c%s       1 %s] ", sev, at.Format("0102 15:04:05.000000"), src)
	}
	fmt.Fprintf(cw, "I1205 09:59:59.100000       1 server_linux.go:66] \"Using iptables proxy\"\n")
	fmt.Fprintf(cw, "I1205 09:59:59.200000       1 server.go:677] \"Version info\" version=\"v1.31.4\"\n")
	fmt.Fprintf(cw, "I1205 09:59:59.300000       1 server_linux.go:169] \"Using iptables Proxier\"\n")
	for i := 0; cw.n < size; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		svc := "svc-" + strconv.Itoa(i%10000)
		header('I', at, "proxier.go:805")
		fmt.Fprintf(cw, "\"Syncing iptables rules\"\n")
		if i%3 == 0 {
			header('I', at.Add(2*time.Millisecond), "servicechangetracker.go:105")
			fmt.Fprintf(cw, "\"Adding new service port\" portName=\"default/%s:http\" servicePort=\"10.96.%d.%d:80/TCP\"\n", svc, i/256%256, i%256)
		}
		header('I', at.Add(5*time.Millisecond), "proxier.go:1494")
		fmt.Fprintf(cw, "\"Reloading service iptables data\" numServices=10000 numEndpoints=30000 numFilterChains=6 numFilterRules=5 numNATChains=20004 numNATRules=70008\n")
		if i%2000 == 1999 {
			header('E', at.Add(900*time.Millisecond), "proxier.go:1520")
			fmt.Fprintf(cw, "\"Failed to execute iptables-restore\" err=<\n\texit status 1: iptables-restore: line %d failed\n > ipFamily=\"IPv4\"\n", 4000+i%997)
		} else {
			header('I', at.Add(900*time.Millisecond), "proxier.go:799")
			fmt.Fprintf(cw, "\"SyncProxyRules complete\" elapsed=\"%dms\"\n", 850+i%97)
		}
		if i%600 == 599 {
			header('W', at.Add(950*time.Millisecond), "reflector.go:561")
			fmt.Fprintf(cw, "k8s.io/client-go/informers/factory.go:160: watch of *v1.EndpointSlice ended with: an error on the server (\"unable to decode an event from the watch stream: http2: client connection lost\") has prevented the request from succeeding\n")
		}
		if cw.err != nil {
			return cw.err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return cw.err
}

// countWriter counts the bytes written through it and keeps the first
// error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
