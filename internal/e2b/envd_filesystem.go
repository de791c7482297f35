package e2b

import (
	"context"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// envd's filesystem.Filesystem service (spec/envd/filesystem/
// filesystem.proto), in protobuf's JSON mapping. The operations are the
// sandbox's control socket's (guest_files.go), done by its sentry as the
// request's user: what they do is what that user could do from a shell
// there, on an image with no shell or tools as well.

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

// entryOf is envd's entry of e, its ids named by names.
func entryOf(e control.FileEntry, names idNames) *entryInfo {
	info := &entryInfo{Name: path.Base(e.Path), Path: e.Path, Size: strconv.FormatInt(e.Size, 10),
		Mode: e.Mode & uint32(fs.ModePerm), Owner: names.owner(e), Group: names.group(e)}
	mode := fs.FileMode(info.Mode)
	switch e.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		info.Type = fileTypeFile
	case syscall.S_IFDIR:
		info.Type = fileTypeDirectory
		mode |= fs.ModeDir
	case syscall.S_IFLNK:
		info.Type = fileTypeSymlink
		mode |= fs.ModeSymlink
		target := e.Target
		info.SymlinkTarget = &target
	case syscall.S_IFIFO:
		info.Type = fileTypeUnspecified
		mode |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		info.Type = fileTypeUnspecified
		mode |= fs.ModeSocket
	case syscall.S_IFCHR:
		info.Type = fileTypeUnspecified
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		info.Type = fileTypeUnspecified
		mode |= fs.ModeDevice
	default:
		info.Type = fileTypeUnspecified
		mode |= fs.ModeIrregular
	}
	info.Permissions = mode.String()
	modified := time.Unix(0, e.Mtime).UTC()
	info.ModifiedTime = &modified
	return info
}

// entries are envd's entries of es, their ids named as the sandbox's
// files name them.
func (sb *sandbox) entries(ctx context.Context, es []control.FileEntry) []*entryInfo {
	infos := make([]*entryInfo, 0, len(es))
	if len(es) == 0 {
		return infos
	}
	names := sb.idNames(ctx)
	for _, e := range es {
		infos = append(infos, entryOf(e, names))
	}
	return infos
}

// stat is the entry of p itself, a symlink not followed.
func (sb *sandbox) stat(ctx context.Context, u guestUser, p string) (*entryInfo, error) {
	es, err := sb.inst.fileCall(ctx, control.OpStat, control.FileOp{Path: p, User: fileUser(u)})
	if err != nil {
		return nil, fileFailure(err)
	}
	if len(es) != 1 {
		return nil, rpcErrorf(codeInternal, "stat %s: the sandbox answered %d entries", p, len(es))
	}
	return sb.entries(ctx, es)[0], nil
}

func (sb *sandbox) statRPC(ctx context.Context, u guestUser, req *pathRequest) (*entryResponse, error) {
	e, err := sb.stat(ctx, u, u.resolve(req.Path))
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: e}, nil
}

// listDir lists the directory at the path (a symlink to one followed),
// depth levels down, in the order of their paths: a path that is no
// directory is invalid_argument (ENOTDIR), as envd has it.
func (sb *sandbox) listDir(ctx context.Context, u guestUser, req *listDirRequest) (*listDirResponse, error) {
	depth := req.Depth
	if depth == 0 {
		depth = 1
	}
	es, err := sb.inst.fileCall(ctx, control.OpList, control.FileOp{Path: u.resolve(req.Path), Depth: int(min(depth, maxListDepth)), User: fileUser(u)})
	if err != nil {
		return nil, fileFailure(err)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	return &listDirResponse{Entries: sb.entries(ctx, es)}, nil
}

// maxListDepth bounds how deep a listing goes: no path has more
// components than this.
const maxListDepth = 4096 / 2

// makeDir makes the directory and those missing above it. As envd, one
// that is there already (a symlink to one too) is already_exists, and a
// file there is invalid_argument.
func (sb *sandbox) makeDir(ctx context.Context, u guestUser, req *pathRequest) (*entryResponse, error) {
	p := u.resolve(req.Path)
	fu := fileUser(u)
	// p/. is p followed, and a directory or ENOTDIR: os.Stat's view.
	_, err := sb.inst.fileCall(ctx, control.OpStat, control.FileOp{Path: p + "/.", User: fu})
	switch err := fileFailure(err); {
	case err == nil:
		return nil, rpcErrorf(codeAlreadyExists, "directory %s already exists", p)
	case asRPCError(err).errno == syscall.ENOTDIR:
		return nil, rpcErrorf(codeInvalidArgument, "path %s already exists and is not a directory", p)
	case asRPCError(err).errno != syscall.ENOENT:
		return nil, err
	}
	if _, err := sb.inst.fileCall(ctx, control.OpMkdir, control.FileOp{Path: p, User: fu}); err != nil {
		return nil, fileFailure(err)
	}
	// envd answers with what it knows without a stat.
	return &entryResponse{Entry: &entryInfo{Name: path.Base(p), Type: fileTypeDirectory, Path: p, Size: "0"}}, nil
}

// move renames the source to the destination, making the directories
// above it, as envd: rename(2)'s rules, so a directory replaces only an
// empty one.
func (sb *sandbox) move(ctx context.Context, u guestUser, req *moveRequest) (*entryResponse, error) {
	src, dst := u.resolve(req.Source), u.resolve(req.Destination)
	if _, err := sb.inst.fileCall(ctx, control.OpRename, control.FileOp{Path: src, To: dst, User: fileUser(u)}); err != nil {
		return nil, fileFailure(err)
	}
	return sb.statRPC(ctx, u, &pathRequest{Path: dst})
}

// remove removes the path and what it holds, as rm -rf, except that a
// path that is not there is not_found, as the SDKs expect.
func (sb *sandbox) remove(ctx context.Context, u guestUser, req *pathRequest) (*empty, error) {
	if _, err := sb.inst.fileCall(ctx, control.OpRemove, control.FileOp{Path: u.resolve(req.Path), User: fileUser(u)}); err != nil {
		return nil, fileFailure(err)
	}
	return &empty{}, nil
}
