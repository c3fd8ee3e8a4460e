package cli

import (
	"os"
	"path/filepath"
)

// replaceFile writes data to a new file of the given mode in path's
// directory and renames it over path. An existing file is never opened,
// let alone truncated: a reader that holds it open (or a file that was
// readable by others) never sees the new content, which for a kubeconfig or
// the CLI's config is a secret. Writing in place and then restricting the
// mode left the secret readable in between.
func replaceFile(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	// CreateTemp makes the file 0600 before anything is written to it.
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
