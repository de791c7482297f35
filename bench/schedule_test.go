package bench

import (
	"slices"
	"testing"
)

func TestScheduleInterleaves(t *testing.T) {
	got := Schedule(3, 2)
	want := []Step{
		{0, 0}, {1, 0}, {2, 0}, // warm-up round
		{0, 1}, {1, 1}, {2, 1},
		{0, 2}, {1, 2}, {2, 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Schedule(3, 2) = %v, want %v", got, want)
	}
}

func TestScheduleEdges(t *testing.T) {
	if got := Schedule(0, 5); len(got) != 0 {
		t.Errorf("Schedule(0, 5) = %v, want no steps", got)
	}
	if got, want := Schedule(2, 0), []Step{{0, 0}, {1, 0}}; !slices.Equal(got, want) {
		t.Errorf("Schedule(2, 0) = %v, want the warm-up alone %v", got, want)
	}
}
