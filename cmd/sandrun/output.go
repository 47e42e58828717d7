package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// outputFlag is the -o flag of read commands: table (for people), json
// or yaml (stable, for scripts; docs/cli.md documents the shapes).
// --json is kept as an alias of -o json.
type outputFlag struct {
	format string
	json   bool
}

func (o *outputFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().BoolVar(&o.json, "json", false, "same as -o json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	// A bad format is refused before anything is read or sent.
	next := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if _, err := o.kind(); err != nil {
			return err
		}
		if next != nil {
			return next(cmd, args)
		}
		return nil
	}
}

// kind returns the chosen format, or a usage error naming the flag.
func (o outputFlag) kind() (string, error) {
	if o.json {
		if o.format != "table" && o.format != "json" {
			return "", usageErr("--json and -o %s: choose one", o.format)
		}
		return "json", nil
	}
	switch o.format {
	case "table", "json", "yaml":
		return o.format, nil
	case "":
		return "table", nil
	}
	return "", usageErr("-o/--output %q: want table, json or yaml", o.format)
}

// emit prints v as JSON or YAML, or the table fill makes.
func (c cli) emit(o outputFlag, v any, fill func(*table)) error {
	kind, err := o.kind()
	if err != nil {
		return err
	}
	switch kind {
	case "json":
		return writeJSON(c, v)
	case "yaml":
		return writeYAML(c, v)
	}
	t := &table{}
	fill(t)
	return t.write(c)
}

func writeJSON(c cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeYAML prints v as YAML with its JSON field names and order: the
// JSON form is the contract, YAML another spelling of it.
func writeYAML(c cli, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return err
	}
	blockStyle(&node)
	enc := yaml.NewEncoder(c.stdout)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return err
	}
	return enc.Close()
}

// table is a table for people: aligned columns, each line cut to the
// terminal's width ($COLUMNS, else 80) so that it never wraps; -o json
// has every field in full.
type table struct{ rows [][]string }

func (t *table) header(cols ...string) { t.rows = append(t.rows, cols) }
func (t *table) row(cols ...string)    { t.rows = append(t.rows, cols) }

func (t *table) write(c cli) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 2, 2, ' ', 0)
	for _, r := range t.rows {
		clean := make([]string, len(r))
		for i, col := range r {
			clean[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(col)
		}
		fmt.Fprintln(tw, strings.Join(clean, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	width := terminalWidth()
	for line := range strings.Lines(buf.String()) {
		line = strings.TrimRight(line, " \n")
		if _, err := fmt.Fprintln(c.stdout, cut(line, width)); err != nil {
			return err
		}
	}
	return nil
}

func terminalWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 20 {
		return n
	}
	return 80
}

// cut shortens s to width runes, marking the cut with "…".
func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// blockStyle makes a node parsed from JSON print as block YAML.
func blockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle) != 0 && n.Tag == "!!str" {
		n.Style = 0 // quoted again by the encoder only where YAML needs it
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
