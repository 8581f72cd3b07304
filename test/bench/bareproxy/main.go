// Command bareproxy is the floor the catalog's call path is measured
// against: a bare httputil.ReverseProxy in a process of its own on
// loopback, so that it pays the same hop between processes as the manager
// does. It forwards everything to -target and prints the address it
// listens on as its first line of output.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	target := flag.String("target", "", "base URL requests are forwarded to, for example http://127.0.0.1:8080")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		log.Fatalf("-target must be a URL such as http://127.0.0.1:8080, not %q", *target)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	// http.DefaultTransport keeps only two idle connections per host: a
	// proxy for 32 callers would dial on almost every request.
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute}
	proxy.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("listening: %v", err)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	log.Fatal(srv.Serve(ln))
}
