package confine

import (
	"fmt"
	"sort"
	"strings"
)

// Markdown renders the allowlist as the table docs/security.md shows: each
// call, the arguments it is allowed (any, when not named) and why.
func (l Allowlist) Markdown() string {
	calls := append(Allowlist(nil), l...)
	sort.Slice(calls, func(i, j int) bool { return calls[i].Name < calls[j].Name })
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls.\n\n| call | arguments | why |\n|---|---|---|\n", len(calls))
	for _, c := range calls {
		args := c.Args
		if args == "" {
			args = "any"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, args, c.Why)
	}
	return b.String()
}
