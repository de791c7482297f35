package kernel

import "testing"

// TestKcmpOrderIsATotalOrderThatHidesAddresses checks kcmp's answers for
// a few addresses: 0 for one object, opposite answers for the two ways
// round, no cycle among three, and an order per kind that is not the
// addresses' own for every kind (each kind has its cookies).
func TestKcmpOrderIsATotalOrderThatHidesAddresses(t *testing.T) {
	k := &Kernel{}
	addrs := []uintptr{0x1000, 0x2000, 0x3000, 0xc000123450}
	sameAsAddresses := 0
	for typ := 0; typ < kcmpTypes; typ++ {
		ascending := true
		for i, a := range addrs {
			if r := k.KcmpOrder(typ, a, a); r != 0 {
				t.Errorf("type %d: %#x against itself: %d, want 0", typ, a, r)
			}
			for j, b := range addrs {
				if i == j {
					continue
				}
				r, s := k.KcmpOrder(typ, a, b), k.KcmpOrder(typ, b, a)
				if r+s != 3 || r == 0 {
					t.Errorf("type %d: %#x, %#x: %d one way, %d the other", typ, a, b, r, s)
				}
				if i < j && r != 1 {
					ascending = false
				}
				for _, c := range addrs {
					if c != a && c != b && r == 1 && k.KcmpOrder(typ, b, c) == 1 && k.KcmpOrder(typ, a, c) != 1 {
						t.Errorf("type %d: %#x < %#x < %#x but not %#x < %#x", typ, a, b, c, a, c)
					}
				}
			}
		}
		if ascending {
			sameAsAddresses++
		}
	}
	if sameAsAddresses == kcmpTypes {
		t.Errorf("every kind orders %d addresses as they are ordered", len(addrs))
	}
}
