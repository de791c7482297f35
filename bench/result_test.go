package bench

import "testing"

func TestParseResult(t *testing.T) {
	for _, tc := range []struct {
		out     string
		want    float64
		wantErr bool
	}{
		{"RESULT getppid 131.8 ns/op\n", 131.8, false},
		{"noise\nRESULT getppid 4.2e+03 ns/op\nmore noise\n", 4200, false},
		{"", 0, true},
		{"RESULT getppid 12 ns/op extra\n", 0, true},
		{"RESULT read-4k 12 ns/op\n", 0, true}, // another workload's line
		{"RESULT getppid 12 us/op\n", 0, true}, // the table says ns/op
		{"RESULT getppid -1 ns/op\n", 0, true},
		{"RESULT getppid NaN ns/op\n", 0, true},
	} {
		got, err := parseResult([]byte(tc.out), "getppid", "ns/op")
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseResult(%q) = %v, %v; want %v, error %v", tc.out, got, err, tc.want, tc.wantErr)
		}
	}
}
