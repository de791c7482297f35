package e2b

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

func get(sb *sandbox, u guestUser, p string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	download(w, httptest.NewRequest("GET", "/files?path="+p, nil), sb, u)
	return w
}

func TestDownloadStreamsTheFileOrAnswersEnvdsStatus(t *testing.T) {
	sb, f := newFakeSandbox(t)
	big := make([]byte, 300<<10) // beyond a pipe's buffer
	rand.Read(big)
	f.put("/data", syscall.S_IFDIR|0o755, "")
	f.put("/data/big.bin", syscall.S_IFREG|0o644, string(big))
	f.put("/data/empty", syscall.S_IFREG|0o644, "")
	f.put("/data/secret", syscall.S_IFREG|0o600, "x")
	f.failOn("/data/secret", syscall.EACCES)

	w := get(sb, plainUser, "/data/big.bin")
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), big) || w.Header().Get("Content-Length") != "307200" ||
		!strings.Contains(w.Header().Get("Content-Disposition"), `filename=big.bin`) {
		t.Errorf("download: %d, %d bytes, headers %v", w.Code, w.Body.Len(), w.Header())
	}
	if w := get(sb, plainUser, "/data/empty"); w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("an empty file: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	for p, want := range map[string]int{"/data/nope": 404, "/data": 400, "/data/secret": 403} {
		w := get(sb, plainUser, p)
		var body struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != want || body.Code != want || body.Message == "" || w.Header().Get("Content-Length") != "" {
			t.Errorf("%s: %d %s, want %d with envd's error", p, w.Code, w.Body.String(), want)
		}
	}
}

func post(sb *sandbox, u guestUser, query, contentType string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/files"+query, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	upload(w, r, sb, u)
	return w
}

func TestUploadWritesEachPartAsTheUser(t *testing.T) {
	sb, f := newFakeSandbox(t)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	big := make([]byte, 200<<10)
	rand.Read(big)
	for name, data := range map[string][]byte{"/home/user/a.txt": []byte("aa"), "sub/b.bin": big} {
		// The SDK puts the path in the part's filename.
		part, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(data)
	}
	mw.Close()
	w := post(sb, plainUser, "", mw.FormDataContentType(), body.Bytes())
	var written []writeInfo
	if err := json.Unmarshal(w.Body.Bytes(), &written); w.Code != 200 || err != nil || len(written) != 2 {
		t.Fatalf("multipart upload: %d %s", w.Code, w.Body.String())
	}
	for p, want := range map[string][]byte{"/home/user/a.txt": []byte("aa"), "/home/user/sub/b.bin": big} {
		ff := f.file(p)
		if ff == nil || !bytes.Equal(ff.data, want) || ff.uid != 1000 || ff.gid != 1000 || ff.mode != syscall.S_IFREG|0o644 {
			t.Errorf("%s: %+v", p, ff)
		}
	}
	w = post(sb, plainUser, "?path=raw.bin", "application/octet-stream", big)
	if w.Code != 200 || f.file("/home/user/raw.bin") == nil || !bytes.Equal(f.file("/home/user/raw.bin").data, big) {
		t.Errorf("octet-stream upload: %d %s", w.Code, w.Body.String())
	}
}

func TestUploadFailuresGetEnvdsStatus(t *testing.T) {
	sb, f := newFakeSandbox(t)
	f.put("/dir", syscall.S_IFDIR|0o755, "")
	f.failOn("/ro/file", syscall.EACCES)
	f.failWriteOn("/full", syscall.ENOSPC)
	f.failWriteOn("/fullsmall", syscall.ENOSPC)
	big := make([]byte, 1<<20) // far beyond a pipe's buffer: the write breaks
	for _, c := range []struct {
		path   string
		data   []byte
		status int
	}{
		{"/dir", []byte("x"), 400},
		{"/ro/file", []byte("x"), 403},
		{"/full", big, http.StatusInsufficientStorage},
		{"/fullsmall", []byte("x"), http.StatusInsufficientStorage},
	} {
		w := post(sb, rootUser, "?path="+c.path, "application/octet-stream", c.data)
		if w.Code != c.status || !strings.Contains(w.Body.String(), `"message"`) {
			t.Errorf("%s: %d %s, want %d", c.path, w.Code, w.Body.String(), c.status)
		}
	}
}
