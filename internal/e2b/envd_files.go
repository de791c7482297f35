package e2b

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"

	"github.com/moat-sandbox/moat/internal/control"
)

// envd's file transfer: GET /files downloads a file, POST /files uploads
// files (multipart/form-data, one part named "file" per file, or the
// body itself as application/octet-stream). The data streams through a
// pipe to or from the sandbox's sentry, which reads or writes the file
// as the request's user (guest_files.go).

// writeInfo is what POST /files answers for each file written.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// envdError writes envd's REST error, {"code": status, "message": ...}.
func envdError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": status, "message": fmt.Sprintf(format, args...)})
}

// envdErrorFor writes err as envd's REST error with the status its code
// maps to.
func envdErrorFor(w http.ResponseWriter, err error) {
	e := asRPCError(err)
	status := rpcStatus(e.Code)
	if e.errno != 0 {
		status = errnoStatus(e.errno)
	}
	envdError(w, status, "%s", e.Message)
}

func download(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
	q := r.URL.Query().Get("path")
	if q == "" {
		envdError(w, http.StatusBadRequest, "no path given")
		return
	}
	p := u.resolve(q)
	started := false
	err := sb.inst.readFile(r.Context(), fileUser(u), p, func(e control.FileEntry) io.Writer {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
		if e.Size > 0 {
			// A file of size 0 may still have data: /proc's are made
			// as they are read. Its length then goes unsaid (chunked).
			w.Header().Set("Content-Length", strconv.FormatInt(e.Size, 10))
		}
		w.WriteHeader(http.StatusOK)
		return w
	})
	switch {
	case err != nil && !started:
		// Not opened: a directory is EISDIR, 400, as envd answers it.
		envdErrorFor(w, fileFailure(err))
	case err != nil:
		// The data has started: the response is cut off, so that the
		// client sees the copy broke (a chunked body, of a file whose
		// length went unsaid, would otherwise end as if complete).
		panic(http.ErrAbortHandler)
	}
}

func upload(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
	q := r.URL.Query().Get("path")
	body := io.Reader(r.Body)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			envdError(w, http.StatusBadRequest, "gzip body: %v", err)
			return
		}
		body = zr
	default:
		envdError(w, http.StatusUnsupportedMediaType, "Content-Encoding %q: gzip or none", enc)
		return
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var written []writeInfo
	switch mt {
	case "application/octet-stream":
		if q == "" {
			envdError(w, http.StatusBadRequest, "no path given")
			return
		}
		info, err := sb.writeFile(r, u, u.resolve(q), body)
		if err != nil {
			envdErrorFor(w, err)
			return
		}
		written = append(written, info)
	case "multipart/form-data":
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				envdError(w, http.StatusBadRequest, "multipart body: %v", err)
				return
			}
			if part.FormName() != "file" {
				continue
			}
			target := q
			if target == "" {
				// The raw filename: Part.FileName keeps only its last
				// element, and the SDK puts the file's path there.
				_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
				target = dp["filename"]
			}
			if target == "" {
				envdError(w, http.StatusBadRequest, "a file part without a path")
				return
			}
			info, err := sb.writeFile(r, u, u.resolve(target), part)
			if err != nil {
				envdErrorFor(w, err)
				return
			}
			written = append(written, info)
		}
	default:
		envdError(w, http.StatusUnsupportedMediaType, "Content-Type %q: multipart/form-data or application/octet-stream", mt)
		return
	}
	if len(written) == 0 {
		envdError(w, http.StatusBadRequest, "no file in the request")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(written)
}

// writeFile writes data to p (absolute), making its directory first, and
// replacing what p held; a new file is u's, 0644 as under the usual
// umask.
func (sb *sandbox) writeFile(r *http.Request, u guestUser, p string, data io.Reader) (writeInfo, error) {
	if err := sb.inst.writeFile(r.Context(), fileUser(u), p, 0o644, data); err != nil {
		return writeInfo{}, fileFailure(err)
	}
	return writeInfo{Name: path.Base(p), Type: "file", Path: p}, nil
}
