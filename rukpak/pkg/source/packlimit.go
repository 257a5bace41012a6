package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing/hash"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// errPackTooLarge stops a git fetch whose packfile is larger than the limit.
var errPackTooLarge = errors.New("the packfile is larger than the limit")

// packLimitStorage is the storage of the throw-away repository a git fetch writes into. go-git
// hands the packfile the server streams to PackfileWriter (for every transport: http(s), ssh, git,
// file), so bounding that writer bounds the bytes received: once more than max bytes have arrived
// the write fails, go-git stops reading and closes the connection.
//
// The pack is spooled to a file of its own and only handed to the repository's pack writer once it
// has arrived whole (its trailing checksum matches) and within the limit: go-git's pack writer leaks
// its two file descriptors when it is closed on a truncated or corrupt pack.
type packLimitStorage struct {
	*filesystem.Storage
	max int64
	// spoolDir holds the spooled pack (inside the throw-away directory, removed with it).
	spoolDir string

	received int64
	exceeded bool
}

// PackfileWriter implements storer.PackfileWriter.
func (s *packLimitStorage) PackfileWriter() (io.WriteCloser, error) {
	f, err := os.CreateTemp(s.spoolDir, "pack-")
	if err != nil {
		return nil, fmt.Errorf("spooling the packfile: %w", err)
	}
	return &packSpool{s: s, f: f}, nil
}

// packSpool counts and spools the bytes of one packfile.
type packSpool struct {
	s      *packLimitStorage
	f      *os.File
	failed bool
}

func (w *packSpool) Write(p []byte) (int, error) {
	if w.s.received+int64(len(p)) > w.s.max {
		w.s.received += int64(len(p))
		w.s.exceeded, w.failed = true, true
		return 0, errPackTooLarge
	}
	n, err := w.f.Write(p)
	w.s.received += int64(n)
	if err != nil {
		w.failed = true
	}
	return n, err
}

// Close stores the spooled pack in the repository, unless the fetch failed.
func (w *packSpool) Close() (err error) {
	defer func() {
		_ = w.f.Close()
		if rerr := os.Remove(w.f.Name()); err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
	}()
	if w.failed {
		return nil // the Write error is what the fetch reports
	}
	if fi, err := w.f.Stat(); err == nil && fi.Size() == 0 {
		return nil // nothing was sent: go-git reports it as an empty packfile
	}
	if err := verifyPackTrailer(w.f); err != nil {
		return err
	}
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pw, err := w.s.Storage.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := io.Copy(pw, w.f); err != nil {
		_ = pw.Close()
		return err
	}
	return pw.Close()
}

// verifyPackTrailer checks that f holds a whole packfile: "PACK", and a trailer that is the hash of
// everything before it.
func verifyPackTrailer(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size < 12+hash.Size {
		return errors.New("the packfile is truncated")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := hash.New(hash.CryptoType)
	head := make([]byte, 4)
	if _, err := io.ReadFull(io.TeeReader(f, h), head); err != nil {
		return err
	}
	if string(head) != "PACK" {
		return errors.New("the server did not send a packfile")
	}
	if _, err := io.CopyN(h, f, size-hash.Size-4); err != nil {
		return err
	}
	trailer := make([]byte, hash.Size)
	if _, err := io.ReadFull(f, trailer); err != nil {
		return err
	}
	if !bytes.Equal(trailer, h.Sum(nil)) {
		return errors.New("the packfile is truncated or corrupt (its checksum does not match)")
	}
	return nil
}
