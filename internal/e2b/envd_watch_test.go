package e2b

import (
	"context"
	"reflect"
	"syscall"
	"testing"
)

func TestListingsComparedGiveEnvdsEvents(t *testing.T) {
	const file = syscall.S_IFREG | 0o644
	old := map[string]fileState{
		"kept":     {mode: file, size: 1, mtime: 1},
		"written":  {mode: file, size: 1, mtime: 1},
		"grown":    {mode: file, size: 1, mtime: 1},
		"chmodded": {mode: file, size: 1, mtime: 1},
		"removed":  {mode: file, size: 1, mtime: 1},
		"retyped":  {mode: file, size: 1, mtime: 1},
	}
	cur := map[string]fileState{
		"kept":     {mode: file, size: 1, mtime: 1},
		"written":  {mode: file, size: 1, mtime: 2},
		"grown":    {mode: file, size: 2, mtime: 1},
		"chmodded": {mode: syscall.S_IFREG | 0o600, size: 1, mtime: 1},
		"retyped":  {mode: syscall.S_IFDIR | 0o644, size: 1, mtime: 1},
		"new":      {mode: file, size: 0, mtime: 3},
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

func TestSnapshotsNameFilesRelativeToTheWatchedDirectory(t *testing.T) {
	sb, f := newFakeSandbox(t)
	ctx := context.Background()
	f.put("/w", syscall.S_IFDIR|0o755, "")
	f.put("/w/a", syscall.S_IFDIR|0o755, "")
	f.put("/w/a/b", syscall.S_IFREG|0o644, "bb")
	f.put("/top", syscall.S_IFREG|0o644, "")
	flat, err := sb.snapshot(ctx, plainUser, "/w", false)
	if err != nil || len(flat) != 1 || flat["a"].mode != syscall.S_IFDIR|0o755 {
		t.Errorf("not recursive: %v %v", flat, err)
	}
	deep, err := sb.snapshot(ctx, plainUser, "/w", true)
	if err != nil || len(deep) != 2 || deep["a/b"].size != 2 {
		t.Errorf("recursive: %v %v", deep, err)
	}
	root, err := sb.snapshot(ctx, plainUser, "/", false)
	if _, ok := root["top"]; err != nil || !ok {
		t.Errorf("of /: %v %v", root, err)
	}
	if _, err := sb.snapshot(ctx, plainUser, "/gone", false); code(err) != codeNotFound {
		t.Errorf("a watched directory that is gone: %v", err)
	}
	if _, err := sb.snapshot(ctx, plainUser, "/top", false); code(err) != codeInvalidArgument {
		t.Errorf("watching a file: %v", err)
	}
}
