// Command caller calls a tool through the catalog's REST execute, one call
// after another, from a process of its own. It makes one call first and
// writes "ready" once it is answered; from then on it calls until its
// standard input closes, then writes each answered call's latency in
// microseconds, one a line, and last "errors N". BenchmarkStreams measures
// with it the calls agents make while a change goes out to thousands of
// streams: from the benchmark's own process, a call would wait behind the
// goroutines that read those streams, which no agent does.
package main

import (
	"encoding/json"
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
	want := flag.String("want", "", "the output every answer has")
	flag.Parse()
	client := &http.Client{Timeout: time.Minute}
	call := func() error {
		resp, err := client.Post(*url, "application/json", strings.NewReader(*body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var envelope struct {
			Output  string `json:"output"`
			IsError bool   `json:"isError"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || envelope.IsError || envelope.Output != *want {
			return fmt.Errorf("status %d, output %q, isError %v", resp.StatusCode, envelope.Output, envelope.IsError)
		}
		return nil
	}
	if err := call(); err != nil {
		fmt.Fprintln(os.Stderr, "the first call:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	var latencies []time.Duration
	errors := 0
	for !stop.Load() {
		start := time.Now()
		if err := call(); err != nil {
			if errors == 0 {
				fmt.Fprintln(os.Stderr, "a call:", err)
			}
			errors++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		latencies = append(latencies, time.Since(start))
	}
	for _, l := range latencies {
		fmt.Println(l.Microseconds())
	}
	fmt.Println("errors", errors)
}
