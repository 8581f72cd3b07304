package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// menu is the part of the catalog's OpenAI-format menu the demo prints.
type menu struct {
	Revision string `json:"revision"`
	Tools    []struct {
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	} `json:"tools"`
}

// printMenu writes the menu's revision (short) and each tool with the start
// of its description.
func printMenu(in io.Reader, out io.Writer) error {
	var m menu
	if err := json.NewDecoder(in).Decode(&m); err != nil {
		return fmt.Errorf("reading the menu: %w", err)
	}
	if _, err := fmt.Fprintln(out, "revision", truncate(m.Revision, 12)); err != nil {
		return err
	}
	for _, t := range m.Tools {
		if _, err := fmt.Fprintf(out, "  %-26s %s\n", t.Function.Name, truncate(t.Function.Description, 70)); err != nil {
			return err
		}
	}
	return nil
}

// printRevision writes the menu's revision whole.
func printRevision(in io.Reader, out io.Writer) error {
	var m menu
	if err := json.NewDecoder(in).Decode(&m); err != nil {
		return fmt.Errorf("reading the menu: %w", err)
	}
	_, err := fmt.Fprintln(out, m.Revision)
	return err
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// indent writes the JSON on in with four-space indentation.
func indent(in io.Reader, out io.Writer) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading JSON: %w", err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "    "); err != nil {
		return fmt.Errorf("reading JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err = out.Write(b.Bytes())
	return err
}
