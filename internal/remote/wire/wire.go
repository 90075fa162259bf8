// Package wire is the remote protocol between the remote plugin (an
// application's side) and offload-proxy: one message is an operation, a
// sequence number, a fixed number of integer arguments for that operation
// (unsigned varints), and, where the operation has them, one byte payload
// and one text. The layout of each operation is a table (layouts): Decode
// reads exactly that layout, refuses anything else (an unknown operation,
// a missing or extra byte, a length past the message, a varint of more than
// 64 bits, a text longer than MaxText), and never panics. What the
// arguments mean (a handle that exists, an offset inside a copy) is checked
// by the receiver, which knows its objects.
//
// Queue operations (launch, copies, fill, record, wait, host call) are
// sent without waiting: the proxy keeps their errors on the queue and the
// next sync reports them. Only calls that need an answer wait for a Reply
// with the request's sequence number.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Version is the protocol version a client sends in Hello; a proxy refuses
// another.
const Version = 4

// MaxText bounds a message's text (names of kernels and globals, error
// details).
const MaxText = 4096

// MaxArgs is the most integer arguments an operation has.
const MaxArgs = 10

// Op is a message's operation.
type Op uint8

// Operations. Client to proxy, waiting for a Reply: Hello, Bye, Ping,
// Alloc, Free, EventSync, EventDone, Elapsed, QueueSync, QueueEmpty, Drain,
// ValidBinary, Load, Unload, Kernel, MaxGroup, MaxCoop, Global. Client to
// proxy, not answered: Exit, QueueNew, QueueRelease, CopyTo, CopyFrom,
// CopyDevice, Fill, Launch, HostCall, Record, Wait, EventRelease, HostDone.
// Proxy to client: Reply, Data (bytes of a CopyFrom), CallHost (a queue
// reached a HostCall). A copy between two proxies: the client grants the
// destination proxy the copy (PeerRecv, not answered) and queues PeerSend
// on the source proxy's queue, both at once; the destination tells the
// source whether it accepted the grant (PeerReady, proxy to proxy), and
// once the source's queue reaches the copy and the grant is accepted, the
// source sends the bytes (PeerData), which the destination answers with
// PeerDone once they are in its device memory or have failed. Batch
// (client to proxy, not answered) carries several requests in one message
// (AppendFrame, DecodeBatch): the proxy handles them in order as if each
// had come alone.
const (
	OpInvalid Op = iota
	OpHello
	OpBye
	OpExit
	OpPing
	OpAlloc
	OpFree
	OpQueueNew
	OpQueueRelease
	OpCopyTo
	OpCopyFrom
	OpCopyDevice
	OpFill
	OpLaunch
	OpHostCall
	OpRecord
	OpWait
	OpEventRelease
	OpEventSync
	OpEventDone
	OpElapsed
	OpQueueSync
	OpQueueEmpty
	OpDrain
	OpValidBinary
	OpLoad
	OpUnload
	OpKernel
	OpMaxGroup
	OpMaxCoop
	OpGlobal
	OpHostDone
	OpReply
	OpData
	OpCallHost
	OpPeerRecv
	OpPeerSend
	OpPeerData
	OpPeerDone
	OpBatch
	OpPeerReady
	opCount
)

// HostPiece is the piece of a copy that MPI places straight into a host
// device's memory (from the application, or from another proxy's host
// device), for a chunk size (OFFLOAD_REMOTE_CHUNK) of the copies that are
// staged: 64 chunks (256 MiB by default), at most 1 GiB. Such a piece
// needs no buffer, and each piece costs hand-offs between ranks; 64 chunks
// keep one piece from holding a proxy's receive loop for more than tens
// of milliseconds (docs/remote.md, "Copies without copying").
func HostPiece(chunk uint64) uint64 { return min(64*chunk, 1<<30) }

// Argument positions of the operations whose meaning is not obvious.
const (
	// Launch: queue, kernel, groups x y z, group size x y z, dynamic
	// group memory, cooperative (0/1).
	LaunchArgs = 10
	// Reply: Args[0] is the result code (0: success), Args[1..] values;
	// Text the error's details, Data a payload.
	ReplyArgs = 4
)

type layout struct {
	name  string
	args  int
	data  bool
	text  bool
	reply bool // the sender waits for a Reply
}

var layouts = [opCount]layout{
	OpHello:        {"Hello", 1, false, false, true},           // version
	OpBye:          {"Bye", 0, false, false, true},             //
	OpExit:         {"Exit", 0, false, false, false},           //
	OpPing:         {"Ping", 0, false, false, true},            //
	OpAlloc:        {"Alloc", 3, false, false, true},           // dev kind size
	OpFree:         {"Free", 3, false, false, true},            // dev addr kind
	OpQueueNew:     {"QueueNew", 2, false, false, false},       // dev queue
	OpQueueRelease: {"QueueRelease", 1, false, false, false},   // queue
	OpCopyTo:       {"CopyTo", 3, true, false, false},          // queue dev dst; bytes
	OpCopyFrom:     {"CopyFrom", 5, false, false, false},       // queue dev src size token
	OpCopyDevice:   {"CopyDevice", 6, false, false, false},     // queue dstDev dst srcDev src size
	OpFill:         {"Fill", 3, true, false, false},            // queue ptr size; pattern
	OpLaunch:       {"Launch", LaunchArgs, true, false, false}, // see LaunchArgs; argument bytes
	OpHostCall:     {"HostCall", 2, false, false, false},       // queue token
	OpRecord:       {"Record", 3, false, false, false},         // queue event timed
	OpWait:         {"Wait", 2, false, false, false},           // queue event
	OpEventRelease: {"EventRelease", 1, false, false, false},   // event
	OpEventSync:    {"EventSync", 1, false, false, true},       // event
	OpEventDone:    {"EventDone", 1, false, false, true},       // event
	OpElapsed:      {"Elapsed", 2, false, false, true},         // event start
	OpQueueSync:    {"QueueSync", 1, false, false, true},       // queue
	OpQueueEmpty:   {"QueueEmpty", 1, false, false, true},      // queue
	OpDrain:        {"Drain", 0, false, false, true},           //
	OpValidBinary:  {"ValidBinary", 1, true, false, true},      // dev; image
	OpLoad:         {"Load", 2, true, false, true},             // dev program; image
	OpUnload:       {"Unload", 1, false, false, true},          // program
	OpKernel:       {"Kernel", 2, false, true, true},           // program kernel; name
	OpMaxGroup:     {"MaxGroup", 2, false, false, true},        // kernel dynShared
	OpMaxCoop:      {"MaxCoop", 5, false, false, true},         // kernel x y z dynShared
	OpGlobal:       {"Global", 1, false, true, true},           // program; name
	OpHostDone:     {"HostDone", 2, false, true, false},        // token code; details
	OpReply:        {"Reply", ReplyArgs, true, true, false},    // see ReplyArgs
	OpData:         {"Data", 2, true, false, false},            // token offset; bytes
	OpCallHost:     {"CallHost", 1, false, false, false},       // token
	OpPeerRecv:     {"PeerRecv", 5, false, false, false},       // dev dst size srcRank token
	OpPeerSend:     {"PeerSend", 8, false, false, false},       // queue dev src size dstRank token chunk timeoutMs
	OpPeerData:     {"PeerData", 3, true, false, false},        // client token offset; bytes
	OpPeerDone:     {"PeerDone", 3, false, true, false},        // client token code; details
	OpBatch:        {"Batch", 1, true, false, false},           // count; frames (AppendFrame)
	OpPeerReady:    {"PeerReady", 4, false, true, false},       // client token code placed; details
}

func (o Op) String() string {
	if o > OpInvalid && o < opCount {
		return layouts[o].name
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// WantsReply reports whether the sender of o waits for a Reply.
func (o Op) WantsReply() bool { return o > OpInvalid && o < opCount && layouts[o].reply }

// Msg is one decoded message. Data aliases the buffer it was decoded from.
type Msg struct {
	Op   Op
	Seq  uint64
	Args [MaxArgs]uint64
	Data []byte
	Text string
}

// Append encodes m at the end of buf. Arguments past the operation's
// layout, and Data or Text of an operation without them, are not sent.
func Append(buf []byte, m *Msg) ([]byte, error) {
	if m.Op <= OpInvalid || m.Op >= opCount {
		return buf, fmt.Errorf("wire: cannot encode %v", m.Op)
	}
	l := layouts[m.Op]
	if len(m.Text) > MaxText {
		return buf, fmt.Errorf("wire: %v text of %d bytes (at most %d)", m.Op, len(m.Text), MaxText)
	}
	buf = append(buf, byte(m.Op))
	buf = binary.AppendUvarint(buf, m.Seq)
	for i := 0; i < l.args; i++ {
		buf = binary.AppendUvarint(buf, m.Args[i])
	}
	if l.data {
		buf = binary.AppendUvarint(buf, uint64(len(m.Data)))
		buf = append(buf, m.Data...)
	}
	if l.text {
		buf = binary.AppendUvarint(buf, uint64(len(m.Text)))
		buf = append(buf, m.Text...)
	}
	return buf, nil
}

// AppendHeader encodes m as Append would with a payload of dataLen bytes,
// up to where the payload starts: the caller places the payload right
// after it (a large payload is then not copied into the message). m's
// operation must have a payload and no text.
func AppendHeader(buf []byte, m *Msg, dataLen uint64) ([]byte, error) {
	if m.Op <= OpInvalid || m.Op >= opCount || !layouts[m.Op].data || layouts[m.Op].text {
		return buf, fmt.Errorf("wire: no header of %v", m.Op)
	}
	buf = append(buf, byte(m.Op))
	buf = binary.AppendUvarint(buf, m.Seq)
	for i := 0; i < layouts[m.Op].args; i++ {
		buf = binary.AppendUvarint(buf, m.Args[i])
	}
	return binary.AppendUvarint(buf, dataLen), nil
}

// MaxHeader bounds what AppendHeader writes.
const MaxHeader = 1 + (MaxArgs+2)*binary.MaxVarintLen64

// Encode returns m encoded.
func Encode(m *Msg) ([]byte, error) { return Append(make([]byte, 0, 32+len(m.Data)+len(m.Text)), m) }

// ErrMalformed is wrapped by every error of Decode.
var ErrMalformed = errors.New("wire: malformed message")

type reader struct {
	b   []byte
	err error
}

// label names a field in an error, formatted only when there is one
// (Decode runs per request: no formatting on its way): what, after op's
// name where op is set, with i where i >= 0.
type label struct {
	op   Op
	what string
	i    int
}

func (l label) String() string {
	s := l.what
	if l.i >= 0 {
		s = fmt.Sprintf("%s %d", s, l.i)
	}
	if l.op != OpInvalid {
		s = l.op.String() + " " + s
	}
	return s
}

func (r *reader) uvarint(what string) uint64 { return r.uvarintL(label{what: what, i: -1}) }

func (r *reader) uvarintL(l label) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: %s is cut short or longer than 64 bits", ErrMalformed, l)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(what string, max uint64) []byte {
	return r.bytesL(label{what: what, i: -1}, max)
}

func (r *reader) bytesL(l label, max uint64) []byte {
	if r.err != nil {
		return nil
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = fmt.Errorf("%w: %s length is cut short or longer than 64 bits", ErrMalformed, l)
		return nil
	}
	r.b = r.b[k:]
	if n > uint64(len(r.b)) || n > max {
		r.err = fmt.Errorf("%w: %s of %d bytes, %d left in the message (at most %d)", ErrMalformed, l, n, len(r.b), max)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Decode reads one message. Any error wraps ErrMalformed.
func Decode(b []byte) (Msg, error) {
	var m Msg
	if len(b) == 0 {
		return m, fmt.Errorf("%w: empty", ErrMalformed)
	}
	m.Op = Op(b[0])
	if m.Op <= OpInvalid || m.Op >= opCount {
		return Msg{}, fmt.Errorf("%w: unknown operation %d", ErrMalformed, b[0])
	}
	l := layouts[m.Op]
	r := reader{b: b[1:]}
	m.Seq = r.uvarint("sequence number")
	for i := 0; i < l.args; i++ {
		m.Args[i] = r.uvarintL(label{m.Op, "argument", i})
	}
	if l.data {
		m.Data = r.bytesL(label{m.Op, "payload", -1}, math.MaxInt)
	}
	if l.text {
		m.Text = string(r.bytesL(label{m.Op, "text", -1}, MaxText))
	}
	if r.err != nil {
		return Msg{}, r.err
	}
	if len(r.b) != 0 {
		return Msg{}, fmt.Errorf("%w: %d bytes after a %v message", ErrMalformed, len(r.b), m.Op)
	}
	return m, nil
}

// DecodeHeader reads what AppendHeader wrote: a message of an operation
// with a payload and no text, without the payload's bytes, whose length
// it returns. Any error wraps ErrMalformed.
func DecodeHeader(b []byte) (Msg, uint64, error) {
	var m Msg
	if len(b) == 0 {
		return m, 0, fmt.Errorf("%w: empty", ErrMalformed)
	}
	m.Op = Op(b[0])
	if m.Op <= OpInvalid || m.Op >= opCount || !layouts[m.Op].data || layouts[m.Op].text {
		return Msg{}, 0, fmt.Errorf("%w: no header of operation %d", ErrMalformed, b[0])
	}
	r := reader{b: b[1:]}
	m.Seq = r.uvarint("sequence number")
	for i := 0; i < layouts[m.Op].args; i++ {
		m.Args[i] = r.uvarintL(label{m.Op, "argument", i})
	}
	n := r.uvarintL(label{m.Op, "payload length", -1})
	if r.err != nil {
		return Msg{}, 0, r.err
	}
	if len(r.b) != 0 {
		return Msg{}, 0, fmt.Errorf("%w: %d bytes after a %v header", ErrMalformed, len(r.b), m.Op)
	}
	return m, n, nil
}

// AppendParams encodes a kernel's parameters (offset, size pairs) for a
// Kernel reply.
func AppendParams(buf []byte, params [][2]uint64) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(params)))
	for _, p := range params {
		buf = binary.AppendUvarint(buf, p[0])
		buf = binary.AppendUvarint(buf, p[1])
	}
	return buf
}

// MaxParams bounds a kernel's parameter count in a Kernel reply.
const MaxParams = 1 << 16

// DecodeParams reads what AppendParams wrote.
func DecodeParams(b []byte) ([][2]uint64, error) {
	r := reader{b: b}
	n := r.uvarint("parameter count")
	if r.err == nil && (n > MaxParams || n > uint64(len(b))) {
		return nil, fmt.Errorf("%w: %d kernel parameters", ErrMalformed, n)
	}
	out := make([][2]uint64, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		out = append(out, [2]uint64{r.uvarint("parameter offset"), r.uvarint("parameter size")})
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the parameters", ErrMalformed, len(r.b))
	}
	return out, nil
}

// MaxBatch bounds the frames' bytes of one Batch (a client sends far
// less: plugins/remote's batchBytes).
const MaxBatch = 1 << 20

// minFrame is the smallest frame: a length byte, an operation, a
// sequence number.
const minFrame = 3

// AppendFrame encodes m as one frame of a Batch's payload: its length (a
// varint), then m as Append encodes it. A Batch or Exit is never a frame.
func AppendFrame(buf []byte, m *Msg) ([]byte, error) {
	if m.Op == OpBatch || m.Op == OpExit {
		return buf, fmt.Errorf("wire: %v cannot be in a batch", m.Op)
	}
	n, err := size(m)
	if err != nil {
		return buf, err
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	return Append(buf, m)
}

// size is the length of Append's encoding of m.
func size(m *Msg) (int, error) {
	if m.Op <= OpInvalid || m.Op >= opCount {
		return 0, fmt.Errorf("wire: cannot encode %v", m.Op)
	}
	if len(m.Text) > MaxText {
		return 0, fmt.Errorf("wire: %v text of %d bytes (at most %d)", m.Op, len(m.Text), MaxText)
	}
	l := layouts[m.Op]
	n := 1 + uvarintLen(m.Seq)
	for i := 0; i < l.args; i++ {
		n += uvarintLen(m.Args[i])
	}
	if l.data {
		n += uvarintLen(uint64(len(m.Data))) + len(m.Data)
	}
	if l.text {
		n += uvarintLen(uint64(len(m.Text))) + len(m.Text)
	}
	return n, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// DecodeBatch reads a Batch's frames (m decoded by Decode): each is
// checked exactly as a lone message by Decode; a Batch or Exit among them,
// a frame longer than what is left, a count (Args[0]) that is not the
// frames', or a payload over MaxBatch is refused, and then none of the
// frames is returned. Requests that want a reply may be frames: the
// receiver answers each as if it had come alone. Any error wraps
// ErrMalformed. The frames are appended to out[:0] (a receiver reuses
// one slice: a batch of launches holds up to about 2,000 frames).
func DecodeBatch(m *Msg, out []Msg) ([]Msg, error) {
	if m.Op != OpBatch {
		return nil, fmt.Errorf("%w: %v is not a batch", ErrMalformed, m.Op)
	}
	if len(m.Data) > MaxBatch {
		return nil, fmt.Errorf("%w: batch of %d bytes (at most %d)", ErrMalformed, len(m.Data), MaxBatch)
	}
	count := m.Args[0]
	if count == 0 || count > uint64(len(m.Data)/minFrame) {
		return nil, fmt.Errorf("%w: batch of %d frames in %d bytes", ErrMalformed, count, len(m.Data))
	}
	out = out[:0]
	r := reader{b: m.Data}
	for len(r.b) > 0 {
		f := r.bytesL(label{what: "batch frame", i: len(out)}, MaxBatch)
		if r.err != nil {
			return nil, r.err
		}
		if uint64(len(out)) == count {
			return nil, fmt.Errorf("%w: batch of more than its %d frames", ErrMalformed, count)
		}
		fm, err := Decode(f)
		if err != nil {
			return nil, fmt.Errorf("batch frame %d: %w", len(out), err)
		}
		if fm.Op == OpBatch || fm.Op == OpExit {
			return nil, fmt.Errorf("%w: batch frame %d is a %v", ErrMalformed, len(out), fm.Op)
		}
		out = append(out, fm)
	}
	if uint64(len(out)) != count {
		return nil, fmt.Errorf("%w: batch of %d frames, %d announced", ErrMalformed, len(out), count)
	}
	return out, nil
}

// Inventory is a proxy's answer to Hello: its platforms and their devices,
// with the plugins' own answers. It is sent once per client.
type Inventory struct {
	Host      string
	Platforms []PlatformDesc
}

// PlatformDesc describes one platform of a proxy.
type PlatformDesc struct {
	Name, Vendor, Version string
	Backend               uint32
	Devices               []DeviceDesc
}

// DeviceDesc describes one device: Index is its number in the proxy's
// requests (the dev argument).
type DeviceDesc struct {
	Index uint32
	Info  plugin.DeviceInfo
}

// MaxDevices bounds the devices of an inventory.
const MaxDevices = 4096

func appendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendInventory encodes inv: the host, then per platform its strings,
// backend and devices; a device's information is every field of
// plugin.DeviceInfo in order, each a presence byte and, when present, its
// value (strings with their length, numbers as varints, booleans as a
// byte, dimensions as three varints).
func AppendInventory(b []byte, inv *Inventory) []byte {
	b = appendString(b, inv.Host)
	b = binary.AppendUvarint(b, uint64(len(inv.Platforms)))
	for _, p := range inv.Platforms {
		b = appendString(appendString(appendString(b, p.Name), p.Vendor), p.Version)
		b = binary.AppendUvarint(b, uint64(p.Backend))
		b = binary.AppendUvarint(b, uint64(len(p.Devices)))
		for _, d := range p.Devices {
			b = binary.AppendUvarint(b, uint64(d.Index))
			v := reflect.ValueOf(&d.Info).Elem()
			for i := range v.NumField() {
				f := v.Field(i)
				if !f.Field(1).Bool() {
					b = append(b, 0)
					continue
				}
				b = append(b, 1)
				b = appendValue(b, f.Field(0))
			}
		}
	}
	return b
}

func appendValue(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return appendString(b, v.String())
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(b, v.Uint())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return binary.AppendUvarint(b, uint64(v.Int()))
	case reflect.Struct:
		for i := range v.NumField() {
			b = appendValue(b, v.Field(i))
		}
		return b
	}
	panic(fmt.Sprintf("wire: DeviceInfo has a %v field", v.Kind()))
}

func (r *reader) str(what string) string { return string(r.bytes(what, MaxText)) }

func (r *reader) value(v reflect.Value, what string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(r.str(what))
	case reflect.Bool:
		switch r.uvarint(what) {
		case 0:
		case 1:
			v.SetBool(true)
		default:
			if r.err == nil {
				r.err = fmt.Errorf("%w: %s is not a boolean", ErrMalformed, what)
			}
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := r.uvarint(what)
		if v.OverflowUint(n) && r.err == nil {
			r.err = fmt.Errorf("%w: %s %d does not fit", ErrMalformed, what, n)
		}
		v.SetUint(n)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		n := int64(r.uvarint(what))
		if (n < 0 || v.OverflowInt(n)) && r.err == nil {
			r.err = fmt.Errorf("%w: %s %d does not fit", ErrMalformed, what, n)
		}
		v.SetInt(n)
	case reflect.Struct:
		for i := range v.NumField() {
			r.value(v.Field(i), what)
		}
	}
}

// DecodeInventory reads what AppendInventory wrote.
func DecodeInventory(b []byte) (*Inventory, error) {
	r := reader{b: b}
	inv := &Inventory{Host: r.str("host")}
	np := r.uvarint("platform count")
	if r.err == nil && np > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: %d platforms", ErrMalformed, np)
	}
	devs := uint64(0)
	for i := uint64(0); i < np && r.err == nil; i++ {
		p := PlatformDesc{Name: r.str("platform name"), Vendor: r.str("platform vendor"), Version: r.str("platform version")}
		be := r.uvarint("backend")
		if be > math.MaxUint32 && r.err == nil {
			r.err = fmt.Errorf("%w: backend %d", ErrMalformed, be)
		}
		p.Backend = uint32(be)
		nd := r.uvarint("device count")
		if devs += nd; r.err == nil && (devs > MaxDevices || nd > uint64(len(r.b))) {
			return nil, fmt.Errorf("%w: %d devices", ErrMalformed, devs)
		}
		for j := uint64(0); j < nd && r.err == nil; j++ {
			var d DeviceDesc
			idx := r.uvarint("device index")
			if idx > math.MaxUint32 && r.err == nil {
				r.err = fmt.Errorf("%w: device index %d", ErrMalformed, idx)
			}
			d.Index = uint32(idx)
			v := reflect.ValueOf(&d.Info).Elem()
			for k := range v.NumField() {
				f := v.Field(k)
				name := v.Type().Field(k).Name
				switch r.uvarint(name) {
				case 0:
				case 1:
					f.Field(1).SetBool(true)
					r.value(f.Field(0), name)
				default:
					if r.err == nil {
						r.err = fmt.Errorf("%w: %s presence", ErrMalformed, name)
					}
				}
			}
			p.Devices = append(p.Devices, d)
		}
		inv.Platforms = append(inv.Platforms, p)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the inventory", ErrMalformed, len(r.b))
	}
	return inv, nil
}
