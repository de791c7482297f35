package inet

import "testing"

// Linux's send buffer for an established connection: 87040 bytes for
// Ethernet's segments, 2.6 MB for loopback's (with CUBIC or Reno).
func TestEstablishedSendBufferIsLinuxs(t *testing.T) {
	for mss, want := range map[int]int64{1460: 87040, 65496: 2626560, 536: 2 * 10 * (2048 + 256)} {
		if got := establishedSendBuffer(mss); got != want {
			t.Errorf("establishedSendBuffer(%d) = %d, want %d", mss, got, want)
		}
	}
}
