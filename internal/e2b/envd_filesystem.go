package e2b

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// envd's filesystem.Filesystem service (spec/envd/filesystem/
// filesystem.proto), in protobuf's JSON mapping. The operations run the
// image's own find, mkdir, mv and rm in the sandbox, as the request's
// user: what they do is what that user could do from a shell there, and
// what they report is parsed as untrusted text.

type entryInfo struct {
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Path          string     `json:"path"`
	Size          string     `json:"size"` // int64: a string in JSON
	Mode          uint32     `json:"mode"`
	Permissions   string     `json:"permissions"`
	Owner         string     `json:"owner"`
	Group         string     `json:"group"`
	ModifiedTime  *time.Time `json:"modifiedTime,omitempty"`
	SymlinkTarget *string    `json:"symlinkTarget,omitempty"`
}

// File types, as filesystem.FileType names them.
const (
	fileTypeUnspecified = "FILE_TYPE_UNSPECIFIED"
	fileTypeFile        = "FILE_TYPE_FILE"
	fileTypeDirectory   = "FILE_TYPE_DIRECTORY"
	fileTypeSymlink     = "FILE_TYPE_SYMLINK"
)

type pathRequest struct {
	Path string `json:"path"`
}

type listDirRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

type entryResponse struct {
	Entry *entryInfo `json:"entry"`
}

type listDirResponse struct {
	Entries []*entryInfo `json:"entries"`
}

// findFormat has find print, for each file, eight fields each ended by
// a NUL, which no path holds: type, size, permission bits, owner, group,
// modification time, path and symlink target.
const findFormat = `%y\0%s\0%m\0%u\0%g\0%T@\0%p\0%l\0`

const findFields = 8

// findFiles runs find on p (absolute) with args before -printf, and parses
// what it prints. A p that does not exist is not_found.
func (sb *sandbox) findFiles(ctx context.Context, u guestUser, p string, args ...string) ([]*entryInfo, error) {
	var out bytes.Buffer
	argv := append([]string{"find", p}, args...)
	argv = append(argv, "-printf", findFormat)
	code, stderr, err := sb.run(ctx, u, nil, &out, argv...)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		if strings.Contains(stderr, "No such file or directory") {
			return nil, rpcErrorf(codeNotFound, "path %s does not exist", p)
		}
		if strings.Contains(stderr, "Permission denied") {
			return nil, rpcErrorf(codePermissionDenied, "%s: %s", p, stderr)
		}
		return nil, toolError("find", code, stderr)
	}
	fields := strings.Split(out.String(), "\x00")
	if len(fields)%findFields != 1 || fields[len(fields)-1] != "" {
		return nil, rpcErrorf(codeInternal, "find printed %d fields, not a multiple of %d", len(fields)-1, findFields)
	}
	var entries []*entryInfo
	for i := 0; i+findFields <= len(fields)-1; i += findFields {
		entries = append(entries, parseEntry(fields[i:i+findFields]))
	}
	return entries, nil
}

// parseEntry makes an entry of find's fields.
func parseEntry(f []string) *entryInfo {
	perm, _ := strconv.ParseUint(f[2], 8, 32)
	mode := fs.FileMode(perm) & fs.ModePerm
	e := &entryInfo{Name: path.Base(f[6]), Path: f[6], Size: "0", Mode: uint32(mode), Owner: f[3], Group: f[4]}
	if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
		e.Size = strconv.FormatInt(n, 10)
	}
	switch f[0] {
	case "f":
		e.Type = fileTypeFile
	case "d":
		e.Type = fileTypeDirectory
		mode |= fs.ModeDir
	case "l":
		e.Type = fileTypeSymlink
		mode |= fs.ModeSymlink
		target := f[7]
		e.SymlinkTarget = &target
	default:
		e.Type = fileTypeUnspecified
		mode |= fs.ModeIrregular
	}
	e.Permissions = mode.String()
	if t, ok := parseSeconds(f[5]); ok {
		e.ModifiedTime = &t
	}
	return e
}

// parseSeconds reads find's %T@, seconds since the epoch with a
// fraction.
func parseSeconds(v string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(v, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	return time.Unix(s, ns).UTC(), true
}

// stat is the entry of p itself, not following a symlink.
func (sb *sandbox) stat(ctx context.Context, u guestUser, p string) (*entryInfo, error) {
	entries, err := sb.findFiles(ctx, u, p, "-maxdepth", "0")
	if err != nil {
		return nil, err
	}
	if len(entries) != 1 {
		return nil, rpcErrorf(codeInternal, "find gave %d entries for %s", len(entries), p)
	}
	return entries[0], nil
}

func (sb *sandbox) statRPC(ctx context.Context, u guestUser, req *pathRequest) (*entryResponse, error) {
	e, err := sb.stat(ctx, u, u.resolve(req.Path))
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: e}, nil
}

func (sb *sandbox) listDir(ctx context.Context, u guestUser, req *listDirRequest) (*listDirResponse, error) {
	p := u.resolve(req.Path)
	depth := req.Depth
	if depth == 0 {
		depth = 1
	}
	dir, err := sb.stat(ctx, u, p)
	if err != nil {
		return nil, err
	}
	if dir.Type != fileTypeDirectory {
		return nil, rpcErrorf(codeInvalidArgument, "path %s is not a directory", p)
	}
	entries, err := sb.findFiles(ctx, u, p, "-mindepth", "1", "-maxdepth", strconv.FormatUint(uint64(depth), 10))
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	if entries == nil {
		entries = []*entryInfo{}
	}
	return &listDirResponse{Entries: entries}, nil
}

func (sb *sandbox) makeDir(ctx context.Context, u guestUser, req *pathRequest) (*entryResponse, error) {
	p := u.resolve(req.Path)
	if e, err := sb.stat(ctx, u, p); err == nil {
		if e.Type == fileTypeDirectory {
			return nil, rpcErrorf(codeAlreadyExists, "directory %s already exists", p)
		}
		return nil, rpcErrorf(codeInvalidArgument, "path %s already exists and is not a directory", p)
	} else if asRPCError(err).Code != codeNotFound {
		return nil, err
	}
	if err := sb.tool(ctx, u, "mkdir", "-p", "--", p); err != nil {
		return nil, err
	}
	return sb.statRPC(ctx, u, &pathRequest{Path: p})
}

func (sb *sandbox) move(ctx context.Context, u guestUser, req *moveRequest) (*entryResponse, error) {
	src, dst := u.resolve(req.Source), u.resolve(req.Destination)
	if _, err := sb.stat(ctx, u, src); err != nil {
		return nil, err
	}
	// As envd, the destination's directory is made if it is missing.
	if err := sb.tool(ctx, u, "sh", "-c", `mkdir -p -- "$3" && mv -T -- "$1" "$2"`, "sh", src, dst, path.Dir(dst)); err != nil {
		return nil, err
	}
	return sb.statRPC(ctx, u, &pathRequest{Path: dst})
}

func (sb *sandbox) remove(ctx context.Context, u guestUser, req *pathRequest) (*empty, error) {
	p := u.resolve(req.Path)
	if _, err := sb.stat(ctx, u, p); err != nil {
		return nil, err
	}
	if err := sb.tool(ctx, u, "rm", "-rf", "--", p); err != nil {
		return nil, err
	}
	return &empty{}, nil
}

// tool runs a command that prints nothing worth keeping and fails with
// an error of its stderr.
func (sb *sandbox) tool(ctx context.Context, u guestUser, args ...string) error {
	code, stderr, err := sb.run(ctx, u, nil, nil, args...)
	if err != nil {
		return err
	}
	if code != 0 {
		if strings.Contains(stderr, "Permission denied") {
			return rpcErrorf(codePermissionDenied, "%s: %s", args[0], stderr)
		}
		return toolError(args[0], code, stderr)
	}
	return nil
}
