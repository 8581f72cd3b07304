// Command pageserver is the floor the catalog's listings are measured
// against: http.ServeContent of pre-encoded answers, in a process of its
// own on loopback as the manager is, so that both pay the same hop between
// processes. Page i is -dir/i, served with the content type in -dir/i.type,
// at /?page=i whatever the request says. It prints the address it listens
// on as its first line of output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

type page struct {
	body        []byte
	contentType string
}

func main() {
	dir := flag.String("dir", "", "folder of the pages: 0, 0.type, 1, 1.type, …")
	flag.Parse()
	var pages []page
	for i := 0; ; i++ {
		body, err := os.ReadFile(filepath.Join(*dir, strconv.Itoa(i)))
		if os.IsNotExist(err) {
			break
		}
		if err != nil {
			log.Fatalf("reading page %d: %v", i, err)
		}
		contentType, err := os.ReadFile(filepath.Join(*dir, strconv.Itoa(i)+".type"))
		if err != nil {
			log.Fatalf("reading the content type of page %d: %v", i, err)
		}
		pages = append(pages, page{body: body, contentType: string(contentType)})
	}
	if len(pages) == 0 {
		log.Fatalf("no pages in %q", *dir)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i, err := strconv.Atoi(r.URL.Query().Get("page"))
		if err != nil || i < 0 || i >= len(pages) {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", pages[i].contentType)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(pages[i].body))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("listening: %v", err)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	log.Fatal(srv.Serve(ln))
}
