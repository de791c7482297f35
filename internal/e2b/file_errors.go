package e2b

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/moat-sandbox/moat/internal/control"
)

// A file operation that failed in the sandbox fails with Linux's errno,
// which the answer to the client follows as envd's does (envd's
// services/filesystem and api/download.go, upload.go): a missing file is
// not_found, or 404; a directory where a file should be (or a file where
// a directory should be) invalid_argument, or 400; no space left 507 on
// /files. envd acts as root and gives a permission error no code of its
// own (internal); moat acts as the request's user, whose permission
// errors are permission_denied, or 403. ENOSPC stays internal on the
// Connect calls, as envd has it: the SDKs read resource_exhausted as a
// rate limit.

// fileFailure is err, of a file operation, as the Connect error envd
// answers with, its errno kept for /files' status. An error that is no
// file operation's (the control socket's) is left as it is.
func fileFailure(err error) error {
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Errno == 0 {
		return err
	}
	return &rpcError{Code: errnoCode(ce.Errno), Message: ce.Msg, errno: ce.Errno}
}

// errnoCode is the Connect code of a file operation that failed with
// errno.
func errnoCode(errno syscall.Errno) string {
	switch errno {
	case syscall.ENOENT:
		return codeNotFound
	case syscall.EEXIST:
		return codeAlreadyExists
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return codePermissionDenied
	case syscall.ENOTDIR, syscall.EISDIR, syscall.EINVAL, syscall.ENAMETOOLONG:
		return codeInvalidArgument
	case syscall.ELOOP, syscall.ENOTEMPTY, syscall.EBUSY, syscall.E2BIG:
		// envd's answer to a symlink cycle; a directory not empty is
		// the protocol's own example of a failed precondition; E2BIG is
		// a listing larger than one answer from the sandbox may be
		// (envd has no bound): not the client's to retry as it is, nor
		// resource_exhausted, which the SDKs take for a rate limit.
		return codeFailedPrecondition
	}
	return codeInternal
}

// errnoStatus is the HTTP status of a /files request whose file
// operation failed with errno: its Connect code's, but 507 for no space,
// as envd's /files answers it.
func errnoStatus(errno syscall.Errno) int {
	if errno == syscall.ENOSPC || errno == syscall.EDQUOT {
		return http.StatusInsufficientStorage
	}
	return rpcStatus(errnoCode(errno))
}
