// Command demotool does the few things hack/demo.sh needs beyond kubectl
// and curl, so that the demo needs nothing but Go, kubectl and curl: check
// that a port is free, wait until one accepts connections, and print the
// catalog's JSON answers for a person to read.
//
//	demotool portfree ADDR      exit 0 if ADDR can be listened on
//	demotool waitport ADDR      exit 0 once ADDR accepts connections (10 s at most)
//	demotool menu < menu.json   the revision and one line per tool
//	demotool revision < menu.json   the menu's revision, whole
//	demotool indent < any.json  the JSON, indented
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demotool:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: demotool portfree ADDR | waitport ADDR | menu | revision | indent")
	}
	switch command, rest := args[0], args[1:]; {
	case command == "portfree" && len(rest) == 1:
		return portFree(rest[0])
	case command == "waitport" && len(rest) == 1:
		return waitPort(rest[0], 10*time.Second)
	case command == "menu" && len(rest) == 0:
		return printMenu(in, out)
	case command == "revision" && len(rest) == 0:
		return printRevision(in, out)
	case command == "indent" && len(rest) == 0:
		return indent(in, out)
	default:
		return fmt.Errorf("unknown command or wrong arguments: %q", args)
	}
}
