// Package golit writes Go source literals for the files that tests
// generate from build output (the systrap stub's code, the vDSO image).
package golit

import (
	"fmt"
	"strings"
)

// Bytes returns a []byte literal of b, sixteen bytes to a line.
func Bytes(b []byte) string {
	var s strings.Builder
	s.WriteString("[]byte{")
	for i, c := range b {
		if i%16 == 0 {
			s.WriteString("\n\t")
		} else {
			s.WriteString(" ")
		}
		fmt.Fprintf(&s, "0x%02x,", c)
	}
	s.WriteString("\n}")
	return s.String()
}
