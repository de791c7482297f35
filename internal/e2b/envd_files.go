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
	"strings"
)

// envd's file transfer: GET /files downloads a file, POST /files uploads
// files (multipart/form-data, one part named "file" per file, or the
// body itself as application/octet-stream). The data goes through cat in
// the sandbox, as the request's user.

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
	envdError(w, rpcStatus(e.Code), "%s", e.Message)
}

func download(w http.ResponseWriter, r *http.Request, sb *sandbox, u guestUser) {
	q := r.URL.Query().Get("path")
	if q == "" {
		envdError(w, http.StatusBadRequest, "no path given")
		return
	}
	p := u.resolve(q)
	e, err := sb.stat(r.Context(), u, p)
	if err != nil {
		envdErrorFor(w, err)
		return
	}
	if e.Type == fileTypeDirectory {
		envdError(w, http.StatusBadRequest, "path %s is a directory", p)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	if e.Type == fileTypeFile {
		w.Header().Set("Content-Length", e.Size)
	}
	// The status goes out with the first byte: a cat that fails at once
	// still gets its error answered.
	lw := &lazyWriter{w: w}
	code, stderr, err := sb.run(r.Context(), u, nil, lw, "cat", "--", p)
	if lw.started {
		return // a short body tells the client that the copy broke
	}
	if err == nil && code != 0 {
		err = toolError("cat", code, stderr)
		if strings.Contains(stderr, "Permission denied") {
			err = rpcErrorf(codePermissionDenied, "%s: %s", p, stderr)
		}
	}
	if err != nil {
		w.Header().Del("Content-Length")
		w.Header().Del("Content-Disposition")
		envdErrorFor(w, err)
		return
	}
	w.WriteHeader(http.StatusOK) // an empty file
}

// lazyWriter sends the response's status only when the first byte comes.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) Write(b []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(b)
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
// replacing what p held.
func (sb *sandbox) writeFile(r *http.Request, u guestUser, p string, data io.Reader) (writeInfo, error) {
	code, stderr, err := sb.run(r.Context(), u, data, nil, "sh", "-c", `mkdir -p -- "$2" && cat > "$1"`, "sh", p, path.Dir(p))
	if err != nil {
		return writeInfo{}, err
	}
	if code != 0 {
		switch {
		case strings.Contains(stderr, "Permission denied"):
			return writeInfo{}, rpcErrorf(codePermissionDenied, "%s: %s", p, stderr)
		case strings.Contains(stderr, "Is a directory"):
			return writeInfo{}, rpcErrorf(codeInvalidArgument, "path %s is a directory", p)
		}
		return writeInfo{}, toolError("write", code, stderr)
	}
	return writeInfo{Name: path.Base(p), Type: "file", Path: p}, nil
}
