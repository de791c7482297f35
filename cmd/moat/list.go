package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/moat-sandbox/moat/internal/state"
)

var listCommand = &command{
	name:    "list",
	args:    "",
	minArgs: 0, maxArgs: 0,
	summary: "list the containers under --root",
	setup: func(o *options) func(*globalOptions, []string) error {
		var format string
		var quiet bool
		o.String(&format, "format,f", "FORMAT", "table", "table or json")
		o.Bool(&quiet, "quiet,q", "print only the container ids")
		return func(g *globalOptions, args []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("invalid format %q (want table or json)", format)
			}
			records, err := state.List(g.root)
			if err != nil {
				return err
			}
			states := make([]ociState, 0, len(records))
			for _, c := range records {
				states = append(states, stateOf(c))
			}
			switch {
			case quiet:
				for _, s := range states {
					fmt.Println(s.ID)
				}
				return nil
			case format == "json":
				return json.NewEncoder(os.Stdout).Encode(states)
			default:
				return writeTable(states)
			}
		}
	},
}

// writeTable prints runc's table: same columns, same spacing.
func writeTable(states []ociState) error {
	w := tabwriter.NewWriter(os.Stdout, 12, 1, 3, ' ', 0)
	fmt.Fprint(w, "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n")
	for _, s := range states {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", s.ID, s.PID, s.Status, s.Bundle, s.Created.Format(time.RFC3339Nano), s.Owner)
	}
	return w.Flush()
}
