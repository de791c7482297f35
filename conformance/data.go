package conformance

import (
	"io/fs"
	"os"
	"path/filepath"
)

// The data files the programs read. programs/check.h states the same
// paths, contents and sizes; the two must change together.
const (
	dataDir   = "conformance/data"
	helloText = "Hello, moat conformance!\n"
	blobLen   = 3*4096 + 100 // three pages and a partial one
	// scriptText is an executable "#!" script whose interpreter is the
	// proc_exec program, by a path relative to the working directory
	// (the rootfs root natively and in the container); the optional
	// argument has blanks, which the kernel passes on as one argument.
	scriptText  = "#!conformance/bin/proc_exec --script-mode one arg\n"
	garbageText = "this is neither an ELF file nor a script\n"
)

// blobByte is blob.bin's content at offset i (check.h's blob_byte): no
// period divides the page size, so a page read from the wrong offset cannot
// match by accident.
func blobByte(i int) byte {
	return byte((i*31 + 7) % 251)
}

// etcFiles give busybox's id and ls names for uid and gid 0.
var etcFiles = map[string]string{
	"etc/passwd": "root:x:0:0:root:/:/bin/sh\n",
	"etc/group":  "root:x:0:\n",
}

// writeRootfsData fills a rootfs with the data files, /etc and the empty
// mount points of the container config. Modes are set explicitly so that
// the umask of whoever runs the suite cannot change what programs see.
func writeRootfsData(rootfs string) error {
	blob := make([]byte, blobLen)
	for i := range blob {
		blob[i] = blobByte(i)
	}
	files := map[string][]byte{
		dataDir + "/hello.txt": []byte(helloText),
		dataDir + "/blob.bin":  blob,
		dataDir + "/dir/a":     nil,
		dataDir + "/dir/b":     nil,
	}
	for name, content := range etcFiles {
		files[name] = []byte(content)
	}
	// Executable files: proc_exec runs them.
	execFiles := map[string][]byte{
		dataDir + "/script":  []byte(scriptText),
		dataDir + "/garbage": []byte(garbageText),
	}
	dirs := []string{dataDir + "/dir/sub", "proc", "dev", "bin", "conformance/bin"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
	}
	for name, content := range files {
		p := filepath.Join(rootfs, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o644); err != nil {
			return err
		}
	}
	for name, content := range execFiles {
		p := filepath.Join(rootfs, name)
		if err := os.WriteFile(p, content, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink("hello.txt", filepath.Join(rootfs, dataDir, "link")); err != nil {
		return err
	}
	return filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o755)
	})
}
