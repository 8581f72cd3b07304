package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

var _ = Describe("A manager told to stop (SIGTERM)", Ordered, func() {
	var (
		plane      *testenv.Env
		kubeconfig string
		bin        string
	)
	BeforeAll(func() {
		rig := newProcessRig()
		plane, kubeconfig, bin = rig.plane, rig.kubeconfig, rig.bin
	})

	It("turns unready, ends listening streams, refuses new connections, lets the call in flight finish, then exits", func() {
		ns := plane.Namespace()
		gate := make(chan struct{})
		var inside atomic.Int64
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		up.AddToolFunc("slow", "Answers when the test says.", `{"type":"object"}`, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			inside.Add(1)
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("finished"), nil
		})
		probes := freeAddress()
		manager := startManager(bin, kubeconfig, "--health-probe-bind-address="+probes, "--catalog-drain-timeout=60s", "--graceful-shutdown-timeout=90s")
		// readyz is "<status> <which checks failed>", from the verbose form.
		readyz := func() string {
			resp, err := http.Get("http://" + probes + "/readyz?verbose")
			if err != nil {
				return err.Error()
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			return fmt.Sprintf("%d %s", resp.StatusCode, strings.Join(regexp.MustCompile(`\[-\]\w+`).FindAllString(string(body), -1), ","))
		}
		Eventually(readyz).Should(Equal("200 "), manager.logs)
		srv := plane.CreateServer(ns, "slow", up.URL())
		Eventually(plane.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"), manager.logs)
		Eventually(func() string { return get(manager.catalog, "/v1/tools").body }).Should(ContainSubstring("mcp_slow_slow"))

		listener, err := mcpclient.Connect(ctx, mcpclient.Target{URL: manager.catalog + "/mcp", Transport: mcpclient.TransportStreamableHTTP, Timeout: 10 * time.Second}, func() {})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(listener.Close)
		Eventually(listener.Listening).Should(BeTrue())

		inFlight := make(chan answer, 1)
		go func() { inFlight <- execute2(manager.catalog, "mcp_slow_slow") }()
		Eventually(inside.Load).Should(BeEquivalentTo(1))

		Expect(manager.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(readyz).Should(Equal("500 [-]catalog"), "unready while draining")
		Eventually(listener.Done()).Should(BeClosed(), "the listening stream ends, so its client reconnects elsewhere")
		Eventually(func() int { return get(manager.catalog, "/v1/tools").code }).Should(Equal(-1), "new connections are refused")
		Consistently(inFlight, time.Second).ShouldNot(Receive(), "the call in flight is not cut")
		Expect(manager.done).NotTo(BeClosed())

		close(gate)
		var finished answer
		Eventually(inFlight).Should(Receive(&finished))
		Expect(finished.code).To(Equal(http.StatusOK), finished.body)
		var envelope struct {
			Output string `json:"output"`
		}
		Expect(json.Unmarshal([]byte(finished.body), &envelope)).To(Succeed())
		Expect(envelope.Output).To(Equal("finished"))
		Eventually(manager.done).Should(BeClosed())
		Expect(manager.cmd.ProcessState.ExitCode()).To(Equal(0), manager.logs)
		Expect(manager.logs()).To(ContainSubstring("Stopping the catalog: draining calls in flight"))
		Expect(auditLines(manager.logs())).To(ContainElement(And(HaveKeyWithValue("tool", "mcp_slow_slow"), HaveKeyWithValue("via", "rest"),
			HaveKeyWithValue("outcome", "success"))), "the drained call's audit line went out before the manager exited")
	})
})

// execute2 calls a tool through another catalog's global menu.
func execute2(base, tool string) answer {
	return post(base, "/v1/execute", `{"name":"`+tool+`","arguments":{}}`)
}

// auditLines are the audit trail's lines among a manager's output: the
// JSON lines with an outcome.
func auditLines(output string) []map[string]any {
	var lines []map[string]any
	for _, line := range strings.Split(output, "\n") {
		var fields map[string]any
		if json.Unmarshal([]byte(line), &fields) == nil && fields["outcome"] != nil {
			lines = append(lines, fields)
		}
	}
	return lines
}
