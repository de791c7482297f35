package e2b

import (
	"reflect"
	"testing"
)

func TestListingsComparedGiveEnvdsEvents(t *testing.T) {
	old := map[string]fileState{
		"kept":     {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"written":  {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"grown":    {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"chmodded": {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"removed":  {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"retyped":  {kind: "f", size: "1", perm: "644", mtime: "1.0"},
	}
	cur := map[string]fileState{
		"kept":     {kind: "f", size: "1", perm: "644", mtime: "1.0"},
		"written":  {kind: "f", size: "1", perm: "644", mtime: "2.0"},
		"grown":    {kind: "f", size: "2", perm: "644", mtime: "1.0"},
		"chmodded": {kind: "f", size: "1", perm: "600", mtime: "1.0"},
		"retyped":  {kind: "d", size: "1", perm: "644", mtime: "1.0"},
		"new":      {kind: "f", size: "0", perm: "644", mtime: "3.0"},
	}
	want := []filesystemEvent{
		{"chmodded", eventChmod}, {"grown", eventWrite}, {"new", eventCreate}, {"removed", eventRemove},
		{"retyped", eventRemove}, {"retyped", eventCreate}, {"written", eventWrite},
	}
	if got := changes(old, cur); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := changes(cur, cur); len(got) != 0 {
		t.Errorf("no change gave %v", got)
	}
}
