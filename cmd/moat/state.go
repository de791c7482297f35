package main

import (
	"encoding/json"
	"fmt"
	"os"
)

var stateCommand = &command{
	name:    "state",
	args:    "<container-id>",
	minArgs: 1, maxArgs: 1,
	summary: "print the runtime-spec state of a container as JSON",
	setup: func(o *options) func(*globalOptions, []string) error {
		return func(g *globalOptions, args []string) error {
			dir, c, err := openContainer(g, args[0])
			if err != nil {
				return err
			}
			defer dir.Close()
			out, err := json.MarshalIndent(stateOf(c), "", "  ")
			if err != nil {
				return fmt.Errorf("encode state: %w", err)
			}
			_, err = os.Stdout.Write(append(out, '\n'))
			return err
		}
	},
}
