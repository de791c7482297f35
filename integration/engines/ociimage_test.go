package engines

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ociImageTar writes an OCI image archive (an image layout in a tar, as
// `ctr images import` takes it) of one layer, the tree at root, tagged
// ref, whose process is entrypoint; no registry is involved.
func ociImageTar(t *testing.T, root, ref string, entrypoint []string) string {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		hdr.Name = rel
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{}
	add := func(data []byte) string {
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		blobs[d] = data
		return d
	}
	layerDigest := add(layer.Bytes())
	diffID := layerDigest // uncompressed: the layer is its own diff
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": entrypoint, "Env": []string{"PATH=/bin"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	configDigest := add(config)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json",
			"digest": configDigest, "size": len(config)},
		"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar",
			"digest": layerDigest, "size": layer.Len()}},
	})
	manifestDigest := add(manifest)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []map[string]any{{"mediaType": "application/vnd.oci.image.manifest.v1+json",
			"digest": manifestDigest, "size": len(manifest),
			"annotations": map[string]string{"org.opencontainers.image.ref.name": ref,
				"io.containerd.image.name": ref}}},
	})
	out := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	file := func(name string, data []byte) {
		w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		w.Write(data)
	}
	file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	file("index.json", index)
	for d, data := range blobs {
		file("blobs/sha256/"+d[len("sha256:"):], data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
