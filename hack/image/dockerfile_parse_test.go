package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"
)

// A Dockerfile parser, enough for the repository's Dockerfile: comments,
// line continuations, stages, ARG defaults and ${VAR} in words, and the
// instructions the final stage uses. An instruction or flag it does not
// know fails the test, so that a change to the Dockerfile is a change to
// this comparison too.

type instruction struct {
	cmd  string // upper case
	args string // the rest, continuation lines joined
	line int
}

type stage struct {
	from, name string
	instrs     []instruction
}

// parseDockerfile splits src into stages of instructions.
func parseDockerfile(src string) ([]stage, error) {
	var (
		stages []stage
		buf    strings.Builder
		start  int
	)
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue // Docker drops comments inside continuations too
		}
		if buf.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			buf.WriteString(cont + " ")
			continue
		}
		buf.WriteString(trimmed)
		text := buf.String()
		buf.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			words, err := shellWords(in.args)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", in.line, err)
			}
			s := stage{from: words[0]}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				s.name = words[2]
			} else if len(words) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s", in.line, in.args)
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("line %d: %s before FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	if buf.Len() > 0 {
		return nil, fmt.Errorf("line %d: the last instruction continues past the end", start)
	}
	return stages, nil
}

// shellWords splits s into words as a shell would: blanks separate words,
// double and single quotes group, a backslash escapes the next character.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		word  strings.Builder
		in    bool // inside a word
		quote rune
	)
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == '\'':
			word.WriteRune(r)
		case r == '\\' && i+1 < len(runes):
			i++
			word.WriteRune(runes[i])
			in = true
		case quote == '"':
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
			in = true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c in %q", quote, s)
	}
	if in {
		words = append(words, word.String())
	}
	return words, nil
}

// expand replaces ${VAR} and $VAR with vars' values.
func expand(s string, vars map[string]string) string {
	return os.Expand(s, func(k string) string { return vars[k] })
}

// goBuildCmd is one `go build` a RUN instruction runs.
type goBuildCmd struct {
	env      map[string]string
	trimpath bool
	ldflags  string
	out      string // absolute
	pkg      string // without ./
}

// dockerImage is what a Dockerfile's final stage makes of its base: the
// config and the files it adds.
type dockerImage struct {
	base       string
	user       string
	workdir    string
	entrypoint []string
	env        []string
	labels     map[string]string
	copies     map[string]goBuildCmd // destination → the go build that made it
}

// finalImage evaluates the last stage over a base whose user, workdir and
// env are given, with args as the build arguments (--build-arg); COPY
// --from a stage resolves to the go build of that stage that wrote the
// file.
func finalImage(stages []stage, baseUser, baseWorkdir string, baseEnv []string, args map[string]string) (dockerImage, error) {
	builds := map[string]map[string]goBuildCmd{} // stage → output → build
	for _, s := range stages[:len(stages)-1] {
		b, err := stageBuilds(s, args)
		if err != nil {
			return dockerImage{}, err
		}
		builds[s.name] = b
	}
	last := stages[len(stages)-1]
	img := dockerImage{
		base: last.from, user: baseUser, workdir: baseWorkdir,
		env: append([]string(nil), baseEnv...), labels: map[string]string{}, copies: map[string]goBuildCmd{},
	}
	vars := map[string]string{}
	for _, in := range last.instrs {
		words, err := shellWords(in.args)
		if err != nil {
			return img, fmt.Errorf("line %d: %w", in.line, err)
		}
		for i := range words {
			words[i] = expand(words[i], vars)
		}
		switch in.cmd {
		case "ARG":
			for _, w := range words {
				name, def, _ := strings.Cut(w, "=")
				if v, ok := args[name]; ok {
					def = v
				}
				vars[name] = def
			}
		case "LABEL":
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					return img, fmt.Errorf("line %d: LABEL %s", in.line, w)
				}
				img.labels[k] = v
			}
		case "ENV":
			for _, w := range words {
				if !strings.Contains(w, "=") {
					return img, fmt.Errorf("line %d: ENV in the key value form only", in.line)
				}
				img.env = append(img.env, w)
			}
		case "WORKDIR":
			img.workdir = resolve(img.workdir, words[0])
		case "USER":
			img.user = words[0]
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &img.entrypoint); err != nil {
				return img, fmt.Errorf("line %d: ENTRYPOINT in the exec (JSON) form only: %w", in.line, err)
			}
		case "COPY":
			from := ""
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				f, ok := strings.CutPrefix(words[0], "--from=")
				if !ok {
					return img, fmt.Errorf("line %d: COPY %s: a flag this comparison does not know", in.line, words[0])
				}
				from = f
				words = words[1:]
			}
			if from == "" || len(words) != 2 {
				return img, fmt.Errorf("line %d: COPY --from=<stage> <one source> <destination> only", in.line)
			}
			b, ok := builds[from][words[0]]
			if !ok {
				return img, fmt.Errorf("line %d: no go build in stage %q writes %s", in.line, from, words[0])
			}
			dest := resolve(img.workdir, words[1])
			if words[1] == "." || strings.HasSuffix(words[1], "/") {
				dest = path.Join(dest, path.Base(words[0]))
			}
			img.copies[dest] = b
		default:
			return img, fmt.Errorf("line %d: %s in the final stage: this comparison does not know it", in.line, in.cmd)
		}
	}
	return img, nil
}

// stageBuilds are the go builds of a stage's RUN instructions, by the
// absolute path they write.
func stageBuilds(s stage, args map[string]string) (map[string]goBuildCmd, error) {
	builds := map[string]goBuildCmd{}
	vars := map[string]string{}
	workdir := "/"
	for _, in := range s.instrs {
		switch in.cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			if v, ok := args[name]; ok {
				def = v
			}
			vars[name] = def
		case "WORKDIR":
			workdir = resolve(workdir, expand(in.args, vars))
		case "RUN":
			for _, command := range strings.Split(in.args, "&&") {
				words, err := shellWords(command)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", in.line, err)
				}
				b := goBuildCmd{env: map[string]string{}}
				for len(words) > 0 && strings.Contains(words[0], "=") {
					k, v, _ := strings.Cut(words[0], "=")
					b.env[k] = expand(v, vars)
					words = words[1:]
				}
				if len(words) < 2 || words[0] != "go" || words[1] != "build" {
					continue
				}
				for i := 2; i < len(words); i++ {
					w := expand(words[i], vars)
					switch {
					case w == "-trimpath":
						b.trimpath = true
					case strings.HasPrefix(w, "-ldflags="):
						b.ldflags = strings.TrimPrefix(w, "-ldflags=")
					case w == "-o" && i+1 < len(words):
						i++
						b.out = resolve(workdir, expand(words[i], vars))
					case strings.HasPrefix(w, "-"):
						return nil, fmt.Errorf("line %d: go build %s: a flag this comparison does not know", in.line, w)
					default:
						b.pkg = strings.TrimPrefix(w, "./")
					}
				}
				builds[b.out] = b
			}
		}
	}
	return builds, nil
}

// resolve is p, absolute or relative to dir.
func resolve(dir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}
