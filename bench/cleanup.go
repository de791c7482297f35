package bench

import (
	"errors"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// cleanUp deletes every container left in the runtimes' state directories,
// unmounts what the runtimes mounted there, and removes the session's files.
// It reports what it could not delete.
func (s *session) cleanUp() error {
	var errs []error
	for _, in := range s.instances {
		if in != nil {
			errs = append(errs, in.sweep())
		}
	}
	if s.out != nil {
		s.out.Close()
	}
	errs = append(errs, ocirun.RemoveAll(s.dir))
	return errors.Join(errs...)
}
