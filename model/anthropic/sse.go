package anthropic

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
)

// An sseReader reads a response body's server-sent events as the SDK's
// decoder (ssestream.NewDecoder) does, without its allocations per event:
// lines end at "\n" (a "\r" before it dropped); "event" sets the event's
// type, each "data" line adds to its data, other fields and comments are
// ignored; an empty line (or a lone "\r" at the body's end) ends an
// event that has a type or data, and an event the body does not end so
// is not read. Unlike the SDK's, an event's data does not end with a
// newline after each line: its lines are joined by one, and the data is
// valid only until the next call of Next. FuzzSSEReader holds the two
// readers to the same events.
type sseReader struct {
	body    io.ReadCloser
	buf     *[]byte // from sseBuffers
	r, w    int     // the unread bytes: (*buf)[r:w]
	ev      ssestream.Event
	pending []byte // the event's only data line so far, in buf
	own     []byte // the event's data once it is not in buf
	inOwn   bool
	err     error // the body's read error; io.EOF at its end
	empty   int   // reads in a row that returned nothing
}

var _ ssestream.Decoder = (*sseReader)(nil)

// maxLine is the longest line the SDK's decoder reads: bufio.Scanner's
// limit as the SDK sets it.
const maxLine = bufio.MaxScanTokenSize << 9

// sseBuffers holds read buffers, so that a stream does not allocate one.
var sseBuffers = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// newEvents returns the reader of res's events: an sseReader for a body
// of server-sent events (text/event-stream), the SDK's decoder for any
// other (the SDK may have a decoder registered for its type, as its
// Bedrock middleware does) and when the SDK traces the body (its decoder
// records the events then).
func newEvents(res *http.Response) ssestream.Decoder {
	mediaType, _, _ := strings.Cut(res.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream") {
		return ssestream.NewDecoder(res)
	}
	if _, traced := res.Body.(interface {
		Unwrap() io.ReadCloser
		TraceEvents(ssestream.Decoder) ssestream.Decoder
	}); traced {
		return ssestream.NewDecoder(res)
	}
	return &sseReader{body: res.Body, buf: sseBuffers.Get().(*[]byte)}
}

// Next reads the next event; false at the body's end or a read error.
func (s *sseReader) Next() bool {
	typ, lines := "", 0
	s.pending, s.own, s.inOwn = nil, s.own[:0], false
	for {
		ln, ok := s.line()
		if !ok {
			return false
		}
		if len(ln) == 0 {
			if typ == "" && lines == 0 {
				continue
			}
			s.ev = ssestream.Event{Type: typ, Data: s.pending}
			if s.inOwn {
				s.ev.Data = s.own
			}
			return true
		}
		name, value, _ := bytes.Cut(ln, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			typ = internedType(value)
		case "data":
			lines++
			switch {
			case lines == 1:
				s.pending = value
			case !s.inOwn:
				s.own, s.inOwn, s.pending = append(append(s.own[:0], s.pending...), '\n'), true, nil
				s.own = append(s.own, value...)
			default:
				s.own = append(append(s.own, '\n'), value...)
			}
		}
	}
}

// internedType returns an event type, one of eventTypes without a copy.
func internedType(t []byte) string {
	for _, et := range eventTypes {
		if string(t) == et {
			return et
		}
	}
	return string(t)
}

// line returns the body's next line without its end, or the last line
// when the body ends without one; false at the body's end or after a read
// error.
func (s *sseReader) line() ([]byte, bool) {
	if s.buf == nil {
		return nil, false // closed
	}
	for {
		buf := *s.buf
		if i := bytes.IndexByte(buf[s.r:s.w], '\n'); i >= 0 {
			ln := buf[s.r : s.r+i]
			s.r += i + 1
			return bytes.TrimSuffix(ln, []byte("\r")), true
		}
		if s.err != nil {
			if s.r == s.w {
				return nil, false
			}
			// The body's last line, without an end: the SDK's reader
			// (bufio.ScanLines) returns it too, its "\r" dropped. It
			// ends an event only if that leaves it empty.
			ln := buf[s.r:s.w]
			s.r = s.w
			return bytes.TrimSuffix(ln, []byte("\r")), true
		}
		if s.w == len(buf) {
			if !s.makeRoom() {
				return nil, false
			}
			buf = *s.buf
		}
		n, err := s.body.Read(buf[s.w:])
		s.w += n
		if err != nil {
			s.err = err
		} else if s.empty++; n > 0 {
			s.empty = 0
		} else if s.empty == 100 {
			s.err = io.ErrNoProgress // as bufio.Scanner gives up
		}
	}
}

// makeRoom frees the read bytes of a full buffer, the event's data
// copied out of it first, or else doubles it; false past maxLine.
func (s *sseReader) makeRoom() bool {
	buf := *s.buf
	if s.r > 0 {
		if s.pending != nil {
			s.own, s.inOwn, s.pending = append(s.own[:0], s.pending...), true, nil
		}
		s.w = copy(buf, buf[s.r:s.w])
		s.r = 0
		return true
	}
	if len(buf) >= maxLine {
		s.err = bufio.ErrTooLong
		return false
	}
	grown := make([]byte, 2*len(buf))
	copy(grown, buf[:s.w])
	s.buf = &grown // the event's data, if in buf, stays where it is
	return true
}

// Event returns the event Next read.
func (s *sseReader) Event() ssestream.Event { return s.ev }

// Err returns the body's read error, nil at its end.
func (s *sseReader) Err() error {
	if s.err == io.EOF {
		return nil
	}
	return s.err
}

// Close closes the body and gives the buffer back.
func (s *sseReader) Close() error {
	if s.buf != nil {
		if len(*s.buf) <= 1<<16 {
			sseBuffers.Put(s.buf)
		}
		s.buf = nil
	}
	return s.body.Close()
}
