package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// parseResult finds the line `RESULT <name> <value> <unit>` that a micro
// workload prints and returns its value. The name and unit must be the ones
// the workload table expects: a mismatch means the program and the table
// disagree, and its figure would be reported under the wrong heading.
func parseResult(out []byte, name, unit string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "RESULT" {
			continue
		}
		if len(f) != 4 {
			return 0, fmt.Errorf("malformed result line %q: want RESULT <name> <value> <unit>", sc.Text())
		}
		if f[1] != name || f[3] != unit {
			return 0, fmt.Errorf("result line %q: want name %s and unit %s", sc.Text(), name, unit)
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil || !(v > 0) {
			return 0, fmt.Errorf("result line %q: value is not a positive number", sc.Text())
		}
		return v, nil
	}
	return 0, fmt.Errorf("no RESULT line in the output (%d bytes)", len(out))
}
