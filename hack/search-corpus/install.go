package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// install puts one server's package into dir through its registry's ordinary
// client and returns the command that starts it. npm packages install with
// --ignore-scripts: listing tools needs no browser or native build, and
// post-install downloads cannot reach the internet here anyway.
func install(s server, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making install directory for %s: %w", s.Name, err)
	}
	switch s.Source {
	case "npm":
		return installNPM(s, dir)
	case "go":
		return installGo(s, dir)
	}
	return "", fmt.Errorf("installing %s: unknown source %q", s.Name, s.Source)
}

func installNPM(s server, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", s.Package, "package.json")); err != nil {
		cmd := exec.Command("npm", "install", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund", s.Package+"@"+s.Version)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("installing %s@%s from npm: %w\n%s", s.Package, s.Version, err, out)
		}
	}
	bin, err := npmBin(filepath.Join(dir, "node_modules", s.Package, "package.json"), s.Bin)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "node_modules", ".bin", bin), nil
}

// npmBin picks the executable a package declares: the one named, or its only one.
func npmBin(manifest, want string) (string, error) {
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", manifest, err)
	}
	var pkg struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", fmt.Errorf("decoding %s: %w", manifest, err)
	}
	var single string
	if json.Unmarshal(pkg.Bin, &single) == nil {
		return filepath.Base(pkg.Name), nil
	}
	var bins map[string]string
	if err := json.Unmarshal(pkg.Bin, &bins); err != nil || len(bins) == 0 {
		return "", fmt.Errorf("reading executables of %s: none declared", pkg.Name)
	}
	if want != "" {
		if _, ok := bins[want]; !ok {
			return "", fmt.Errorf("reading executables of %s: no %q", pkg.Name, want)
		}
		return want, nil
	}
	if len(bins) > 1 {
		names := make([]string, 0, len(bins))
		for name := range bins {
			names = append(names, name)
		}
		sort.Strings(names)
		return "", fmt.Errorf("reading executables of %s: several (%v), name one as bin", pkg.Name, names)
	}
	for name := range bins {
		return name, nil
	}
	return "", nil
}

func installGo(s server, dir string) (string, error) {
	bin := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "install", s.Package+"@"+s.Version)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing %s@%s from the Go module proxy: %w\n%s", s.Package, s.Version, err, out)
	}
	return filepath.Join(bin, filepath.Base(s.Package)), nil
}
