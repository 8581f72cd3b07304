package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestPrint(t *testing.T) {
	for _, tc := range []struct {
		name, command, in, want string
	}{{
		name:    "a menu prints its short revision and one line per tool",
		command: "menu",
		in:      `{"revision":"8867e442aa0b1c2d","tools":[{"type":"function","function":{"name":"convert","description":"Converts length, mass and temperature values between units.","parameters":{}}},{"type":"function","function":{"name":"mcp_demo_time_now","description":"The current date and time in an IANA time zone."}}]}`,
		want:    "revision 8867e442aa0b\n  convert                    Converts length, mass and temperature values between units.\n  mcp_demo_time_now          The current date and time in an IANA time zone.\n",
	}, {
		name:    "a long description is cut at 70 characters, counting runes",
		command: "menu",
		in:      `{"revision":"r","tools":[{"function":{"name":"t","description":"` + strings.Repeat("é", 80) + `"}}]}`,
		want:    "revision r\n  t                          " + strings.Repeat("é", 70) + "\n",
	}, {
		name:    "revision prints the menu's revision whole, for the demo to compare with the collection's status",
		command: "revision",
		in:      `{"revision":"8867e442aa0b1c2d3e4f","tools":[]}`,
		want:    "8867e442aa0b1c2d3e4f\n",
	}, {
		name:    "JSON is indented by four spaces, as the README shows results",
		command: "indent",
		in:      `{"output":"42.1648 km","isError":false,"message":{"role":"tool","tool_call_id":"call_1"}}` + "\n",
		want:    "{\n    \"output\": \"42.1648 km\",\n    \"isError\": false,\n    \"message\": {\n        \"role\": \"tool\",\n        \"tool_call_id\": \"call_1\"\n    }\n}\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := run([]string{tc.command}, strings.NewReader(tc.in), &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestPrintRefusesWhatIsNotJSON(t *testing.T) {
	for _, command := range []string{"menu", "revision", "indent"} {
		err := run([]string{command}, strings.NewReader("<html>502 Bad Gateway</html>"), &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), "reading") {
			t.Errorf("%s of HTML: %v, want an error saying what was being read", command, err)
		}
	}
}

func TestPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := run([]string{"portfree", addr}, nil, nil); err == nil {
		t.Errorf("portfree %s while a listener holds it: no error", addr)
	}
	if err := run([]string{"waitport", addr}, nil, nil); err != nil {
		t.Errorf("waitport %s while a listener holds it: %v", addr, err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"portfree", addr}, nil, nil); err != nil {
		t.Errorf("portfree %s after the listener closed: %v", addr, err)
	}
	if err := waitPort(addr, 300*time.Millisecond); err == nil {
		t.Errorf("waitport %s with nothing listening: no error", addr)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"portfree"}, {"menu", "extra"}, {"nope"}} {
		if err := run(args, strings.NewReader(""), &strings.Builder{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
