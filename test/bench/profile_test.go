package bench

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// The manager binary serves no /debug/pprof (and the benchmark uses it as
// it is), so its CPU is profiled from outside with Linux perf, sampling
// the process's user and kernel stacks through Go's frame pointers; the
// samples are written as a pprof profile, so that `go tool pprof` reads
// them as it reads the Go runtime's own. Inlined calls show as part of the
// function they were inlined into.

// perfRate is how many samples a second perf takes of each CPU.
const perfRate = 499

// profileDir is where profiles go: $BENCH_PROFILE_DIR, set by `make
// bench`; without it nothing is profiled.
func profileDir() string { return os.Getenv("BENCH_PROFILE_DIR") }

// profilePass runs work with the manager sampled, and writes name.pprof;
// without a profile folder it runs nothing, and without perf (or when
// perf may not sample) it runs the work unsampled, so that the passes are
// kept working wherever bench-smoke runs. Profiles come from passes of
// their own, after the measured ones and never during them:
// sampling stacks at every context switch and tick cost the manager about
// 170 µs a call on this VM (a call's added p50 of +600 µs against +430 µs
// unsampled, the proxy's +400 µs either way), a cost the bare proxy,
// unsampled, does not pay and no deployment does.
func profilePass(b *testing.B, m *manager, name string, work func()) {
	b.Helper()
	if profileDir() == "" {
		return
	}
	p := profileCPU(b, m, name)
	work()
	p.stop(b)
}

// cpuProfile is perf recording one manager process.
type cpuProfile struct {
	name, data string
	m          *manager
	cmd        *exec.Cmd
}

// profileCPU starts sampling the manager; stop writes name.pprof into the
// profile folder. Without a profile folder, or without perf, it does
// nothing and says so once.
func profileCPU(b *testing.B, m *manager, name string) *cpuProfile {
	b.Helper()
	dir := profileDir()
	if dir == "" {
		return nil
	}
	if _, err := exec.LookPath("perf"); err != nil {
		b.Logf("no CPU profile of %s: perf is not installed", name)
		return nil
	}
	p := &cpuProfile{name: name, m: m, data: filepath.Join(workDir, name+".perf.data")}
	p.cmd = exec.Command("perf", "record", "-F", strconv.Itoa(perfRate), "-g", "-p", strconv.Itoa(m.pid()), "-o", p.data)
	p.cmd.Stdout, p.cmd.Stderr = nil, nil
	if err := p.cmd.Start(); err != nil {
		b.Logf("no CPU profile of %s: %v", name, err)
		return nil
	}
	// perf attaches a moment after it starts.
	time.Sleep(300 * time.Millisecond)
	return p
}

// stop ends the recording and writes the pprof profile.
func (p *cpuProfile) stop(b *testing.B) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
	out := filepath.Join(profileDir(), p.name+".pprof")
	if err := perfToPprof(p.data, binary, out); err != nil {
		b.Logf("CPU profile %s: %v", p.name, err)
		return
	}
	// The binary goes with the profile, for `go tool pprof -list`.
	_ = copyFile(binary, filepath.Join(profileDir(), "manager"))
	b.Logf("CPU profile of the manager: %s", out)
}

func copyFile(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o755)
}

// perfToPprof converts `perf script` output of the manager's samples into
// a pprof CPU profile, with file and line of each Go frame read from the
// binary's line table.
func perfToPprof(data, bin, out string) error {
	symbols, err := newGoSymbols(bin)
	if err != nil {
		return err
	}
	cmd := exec.Command("perf", "script", "-i", data, "-F", "period,ip,sym,dso")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running perf script: %w", err)
	}
	b := newProfileBuilder(symbols, filepath.Base(bin))
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.line(sc.Text())
	}
	b.flush()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("running perf script: %w", err)
	}
	if len(b.p.Sample) == 0 {
		return errors.New("perf recorded no samples")
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	return b.p.Write(f)
}

// goSymbols reads file and line of a program counter from a Go binary.
type goSymbols struct {
	table *gosym.Table
	// slide turns perf's file-relative address into the program counter.
	slide uint64
}

func newGoSymbols(bin string) (*goSymbols, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the manager binary: %w", err)
	}
	defer f.Close()
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil, errors.New("the manager binary has no Go line table")
	}
	raw, err := pcln.Data()
	if err != nil {
		return nil, err
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(raw, text.Addr))
	if err != nil {
		return nil, err
	}
	s := &goSymbols{table: table}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_LOAD && prog.Flags&elf.PF_X != 0 {
			s.slide = prog.Vaddr - prog.Off
		}
	}
	return s, nil
}

// profileBuilder gathers perf's samples: a line with the period, then one
// line per frame, innermost first, then a blank line.
type profileBuilder struct {
	p         *profile.Profile
	symbols   *goSymbols
	binary    string
	mapping   *profile.Mapping
	locations map[string]*profile.Location
	functions map[string]*profile.Function
	period    int64
	stack     []*profile.Location
}

func newProfileBuilder(symbols *goSymbols, binary string) *profileBuilder {
	b := &profileBuilder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:     int64(time.Second) / perfRate,
		},
		symbols: symbols, binary: binary,
		locations: map[string]*profile.Location{}, functions: map[string]*profile.Function{},
	}
	// Every frame is symbolized here, and the mapping says so: without it
	// `go tool pprof <binary> <profile>` would symbolize the addresses
	// again, as if perf's file offsets were program counters, and name
	// the wrong functions.
	b.mapping = &profile.Mapping{ID: 1, Limit: ^uint64(0), File: binary, HasFunctions: true, HasFilenames: true, HasLineNumbers: true}
	b.p.Mapping = []*profile.Mapping{b.mapping}
	return b
}

func (b *profileBuilder) line(text string) {
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		b.flush()
	case !strings.HasPrefix(text, "\t"):
		b.flush()
		b.period, _ = strconv.ParseInt(trimmed, 10, 64)
	default:
		b.stack = append(b.stack, b.location(trimmed))
	}
}

func (b *profileBuilder) flush() {
	if len(b.stack) > 0 {
		b.p.Sample = append(b.p.Sample, &profile.Sample{Location: b.stack, Value: []int64{1, b.period}})
	}
	b.stack = nil
}

// location reads "ip symbol (dso)".
func (b *profileBuilder) location(frame string) *profile.Location {
	ipText, rest, _ := strings.Cut(frame, " ")
	symbol, dso := rest, ""
	if i := strings.LastIndex(rest, " ("); i >= 0 {
		symbol, dso = rest[:i], strings.Trim(rest[i+2:], ")")
	}
	key := ipText + " " + dso
	if loc, ok := b.locations[key]; ok {
		return loc
	}
	ip, _ := strconv.ParseUint(ipText, 16, 64)
	file, line := filepath.Base(dso), 0
	if filepath.Base(dso) == b.binary {
		pc := ip + b.symbols.slide
		if _, l, fn := b.symbols.table.PCToLine(pc); fn != nil {
			// The function's own file (an inlined callee's line may be
			// in another).
			file, _, _ = b.symbols.table.PCToLine(fn.Entry)
			line, symbol = l, fn.Name
		}
	}
	fn, ok := b.functions[symbol]
	if !ok {
		fn = &profile.Function{ID: uint64(len(b.functions) + 1), Name: symbol, SystemName: symbol, Filename: file}
		b.functions[symbol] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	loc := &profile.Location{ID: uint64(len(b.locations) + 1), Mapping: b.mapping, Address: ip, Line: []profile.Line{{Function: fn, Line: int64(line)}}}
	b.locations[key] = loc
	b.p.Location = append(b.p.Location, loc)
	return loc
}
