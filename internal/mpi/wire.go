package mpi

import (
	"encoding/binary"

	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// The transport's framing. Every message begins with one MPI message on
// TagBase whose first byte is its kind:
//
//	kindData   [1] payload                      a message up to inlineMax bytes
//	kindBig    [2 0 0 0][tag u32][n u64][chunk u64][first u64]
//	                                            n bytes follow on tag: the
//	                                            first bytes (if first > 0),
//	                                            then the rest in chunks
//	kindHello  [3 role 0 0 0 0 0 0][nonce u64] host   discovery's question
//	kindReply  [4 role 0 0 0 0 0 0][nonce u64] host   and its answer
//
// (little-endian). Anything else on TagBase is not the transport's and is
// dropped.

type frame struct {
	kind  byte
	data  []byte // kindData: the message (in's bytes)
	tag   int    // kindBig: the payload's tag, size, chunk size and first piece
	n     int
	chunk int
	first int
	role  link.Role // kindHello, kindReply
	nonce uint64
	host  string
}

// bigBody is a kindBig header after its kind byte.
func bigBody(tag, n, chunk, first int) []byte {
	h := make([]byte, bigHeader-1)
	binary.LittleEndian.PutUint32(h[3:], uint32(tag))
	binary.LittleEndian.PutUint64(h[7:], uint64(n))
	binary.LittleEndian.PutUint64(h[15:], uint64(chunk))
	binary.LittleEndian.PutUint64(h[23:], uint64(first))
	return h
}

// helloBody is a hello's or reply's body after its kind byte.
func helloBody(role link.Role, nonce uint64, host string) []byte {
	if len(host) > maxHostBytes {
		host = host[:maxHostBytes]
	}
	m := make([]byte, headerBytes-1+len(host))
	m[0] = byte(role)
	binary.LittleEndian.PutUint64(m[7:], nonce)
	copy(m[headerBytes-1:], host)
	return m
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseFrame decodes a message's first MPI message; false for anything
// that is not exactly one of the forms above.
func parseFrame(in []byte) (frame, bool) {
	if len(in) < 1 || len(in) > inlineMax+1 && in[0] == kindData {
		return frame{}, false
	}
	f := frame{kind: in[0]}
	switch f.kind {
	case kindData:
		f.data = in[1:]
		return f, true
	case kindBig:
		if len(in) != bigHeader || !zero(in[1:4]) {
			return frame{}, false
		}
		tag := binary.LittleEndian.Uint32(in[4:])
		n := binary.LittleEndian.Uint64(in[8:])
		chunk := binary.LittleEndian.Uint64(in[16:])
		first := binary.LittleEndian.Uint64(in[24:])
		if tag < tagChunk0 || tag >= tagChunk0+nChunkTags || n <= inlineMax || n > MaxMessage || chunk == 0 || chunk > 1<<30 ||
			first > n || first > 1<<30 {
			return frame{}, false
		}
		f.tag, f.n, f.chunk, f.first = int(tag), int(n), int(chunk), int(first)
		return f, true
	case kindHello, kindReply:
		if len(in) < headerBytes || len(in) > headerBytes+maxHostBytes || !zero(in[2:8]) {
			return frame{}, false
		}
		f.role = link.Role(in[1])
		if f.role != link.Client && f.role != link.Proxy {
			return frame{}, false
		}
		f.nonce = binary.LittleEndian.Uint64(in[8:])
		f.host = string(in[headerBytes:])
		return f, true
	}
	return frame{}, false
}
