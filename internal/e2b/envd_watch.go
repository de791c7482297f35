package e2b

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// envd's directory watches, streaming (WatchDir) and polled
// (CreateWatcher, GetWatcherEvents, RemoveWatcher). moat has no inotify
// reaching out of the sandbox yet, so a watch compares listings of the
// directory, which the sandbox's sentry makes (OpList), every
// watchPoll: a change shows within one period, changes to one file
// within one period are one event, a file made and removed within one
// is missed, and a rename is a removal and a creation.

// watchPoll is how often a watched directory is listed.
const watchPoll = 250 * time.Millisecond

// Event types, as filesystem.EventType names them.
const (
	eventCreate = "EVENT_TYPE_CREATE"
	eventWrite  = "EVENT_TYPE_WRITE"
	eventRemove = "EVENT_TYPE_REMOVE"
	eventChmod  = "EVENT_TYPE_CHMOD"
)

type watchDirRequest struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

type filesystemEvent struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type watchDirResponse struct {
	Start      *struct{}        `json:"start,omitempty"`
	Filesystem *filesystemEvent `json:"filesystem,omitempty"`
	Keepalive  *struct{}        `json:"keepalive,omitempty"`
}

// fileState is what a listing tells of one file.
type fileState struct {
	mode        uint32 // st_mode: type and permission bits
	size, mtime int64
}

// snapshot lists dir (recursively or not) by path relative to it: a dir
// that is gone is not_found, one that is no directory invalid_argument.
func (sb *sandbox) snapshot(ctx context.Context, u guestUser, dir string, recursive bool) (map[string]fileState, error) {
	depth := 1
	if recursive {
		depth = maxListDepth // as deep as a listing may go
	}
	es, err := sb.inst.fileCall(ctx, control.OpList, control.FileOp{Path: dir, Depth: depth, User: fileUser(u)})
	if err != nil {
		return nil, fileFailure(err)
	}
	snap := make(map[string]fileState, len(es))
	for _, e := range es {
		rel := strings.TrimPrefix(strings.TrimPrefix(e.Path, dir), "/")
		snap[rel] = fileState{mode: e.Mode, size: e.Size, mtime: e.Mtime}
	}
	return snap, nil
}

// changes are the events that turn old into cur, by name.
func changes(old, cur map[string]fileState) []filesystemEvent {
	var evs []filesystemEvent
	for name, now := range cur {
		was, ok := old[name]
		switch {
		case !ok || was.mode&syscall.S_IFMT != now.mode&syscall.S_IFMT:
			if ok {
				evs = append(evs, filesystemEvent{Name: name, Type: eventRemove})
			}
			evs = append(evs, filesystemEvent{Name: name, Type: eventCreate})
		case was.size != now.size || was.mtime != now.mtime:
			evs = append(evs, filesystemEvent{Name: name, Type: eventWrite})
		case was.mode != now.mode:
			evs = append(evs, filesystemEvent{Name: name, Type: eventChmod})
		}
	}
	for name := range old {
		if _, ok := cur[name]; !ok {
			evs = append(evs, filesystemEvent{Name: name, Type: eventRemove})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Name < evs[j].Name })
	return evs
}

func watchCall(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
	serveStream(w, r, func(ctx context.Context, req *watchDirRequest, s *stream) error {
		dir := u.resolve(req.Path)
		prev, err := sb.snapshot(ctx, u, dir, req.Recursive)
		if err != nil {
			return err
		}
		if err := s.Send(watchDirResponse{Start: &struct{}{}}); err != nil {
			return err
		}
		poll := time.NewTicker(watchPoll)
		defer poll.Stop()
		var keepalive <-chan time.Time
		if d := keepaliveInterval(r); d > 0 {
			t := time.NewTicker(d)
			defer t.Stop()
			keepalive = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-keepalive:
				if err := s.Send(watchDirResponse{Keepalive: &struct{}{}}); err != nil {
					return err
				}
			case <-poll.C:
				cur, err := sb.snapshot(ctx, u, dir, req.Recursive)
				if err != nil {
					return err
				}
				for _, ev := range changes(prev, cur) {
					if err := s.Send(watchDirResponse{Filesystem: &ev}); err != nil {
						return err
					}
				}
				prev = cur
			}
		}
	})
}

// watcher is a polled watch: each GetWatcherEvents answers what changed
// since the last.
type watcher struct {
	mu        sync.Mutex
	user      guestUser
	dir       string
	recursive bool
	last      map[string]fileState
}

type watcherIDRequest struct {
	WatcherID string `json:"watcherId"`
}

type createWatcherResponse struct {
	WatcherID string `json:"watcherId"`
}

type watcherEventsResponse struct {
	Events []filesystemEvent `json:"events"`
}

func (sb *sandbox) createWatcher(ctx context.Context, u guestUser, req *watchDirRequest) (*createWatcherResponse, error) {
	dir := u.resolve(req.Path)
	snap, err := sb.snapshot(ctx, u, dir, req.Recursive)
	if err != nil {
		return nil, err
	}
	id := randomID(16)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.watchers == nil {
		sb.watchers = make(map[string]*watcher)
	}
	sb.watchers[id] = &watcher{user: u, dir: dir, recursive: req.Recursive, last: snap}
	return &createWatcherResponse{WatcherID: id}, nil
}

func (sb *sandbox) watcher(id string) (*watcher, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	w, ok := sb.watchers[id]
	if !ok {
		return nil, rpcErrorf(codeNotFound, "watcher %q not found", id)
	}
	return w, nil
}

func (sb *sandbox) watcherEvents(ctx context.Context, _ guestUser, req *watcherIDRequest) (*watcherEventsResponse, error) {
	w, err := sb.watcher(req.WatcherID)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, err := sb.snapshot(ctx, w.user, w.dir, w.recursive)
	if err != nil {
		return nil, err
	}
	evs := changes(w.last, cur)
	w.last = cur
	if evs == nil {
		evs = []filesystemEvent{}
	}
	return &watcherEventsResponse{Events: evs}, nil
}

func (sb *sandbox) removeWatcher(_ context.Context, _ guestUser, req *watcherIDRequest) (*empty, error) {
	if _, err := sb.watcher(req.WatcherID); err != nil {
		return nil, err
	}
	sb.mu.Lock()
	delete(sb.watchers, req.WatcherID)
	sb.mu.Unlock()
	return &empty{}, nil
}
