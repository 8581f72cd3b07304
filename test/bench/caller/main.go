// Command caller calls a tool through the catalog's REST execute, one call
// after another, from a process of its own, until its standard input
// closes; then it writes each answered call's latency in microseconds, one
// a line, and last "errors N". BenchmarkStreams measures with it the calls
// agents make while a change goes out to thousands of streams: from the
// benchmark's own process, a call would wait behind the goroutines that
// read those streams, which no agent does.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "the execute URL")
	body := flag.String("body", "", "the request body")
	want := flag.String("want", "", "text every answer contains")
	flag.Parse()
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	client := &http.Client{Timeout: time.Minute}
	var latencies []time.Duration
	errors := 0
	for !stop.Load() {
		start := time.Now()
		resp, err := client.Post(*url, "application/json", strings.NewReader(*body))
		if err != nil {
			errors++
			continue
		}
		answer, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(*want)) {
			errors++
			continue
		}
		latencies = append(latencies, time.Since(start))
	}
	for _, l := range latencies {
		fmt.Println(l.Microseconds())
	}
	fmt.Println("errors", errors)
}
