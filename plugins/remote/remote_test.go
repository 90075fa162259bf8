package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/server"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type mapEnv map[string]string

func (e mapEnv) Lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// job is an in-process job: clients, and proxies serving the host plugin.
type job struct {
	ends    []*link.PipeEnd
	clients int
	servers []*server.Server
	done    []chan error
	hostPl  []plugin.Platform
}

func startJob(t *testing.T, clients, proxies int) *job {
	t.Helper()
	j := &job{ends: link.Pipe(clients, proxies), clients: clients}
	for r := clients; r < clients+proxies; r++ {
		hp, err := host.New().Init(mapEnv{})
		if err != nil {
			t.Fatal(err)
		}
		s := server.New(j.ends[r], []plugin.Platform{hp}, os.Stderr)
		ch := make(chan error, 1)
		go func() { ch <- s.Serve() }()
		j.servers = append(j.servers, s)
		j.done = append(j.done, ch)
		j.hostPl = append(j.hostPl, hp)
	}
	t.Cleanup(func() {
		for i, ch := range j.done {
			j.ends[clients+i].Close()
			if err := <-ch; err != nil {
				t.Errorf("proxy: %v", err)
			}
			if err := j.hostPl[i].Deinit(); err != nil {
				t.Error(err)
			}
		}
	})
	return j
}

// connect initialises the remote plugin as client rank r of the job.
func (j *job) connect(t *testing.T, r int, env mapEnv) *group {
	t.Helper()
	return connectVia(t, j.ends[r], env)
}

// connectVia initialises the remote plugin over ep.
func connectVia(t *testing.T, ep link.Endpoint, env mapEnv) *group {
	t.Helper()
	SetConnector(func(plugin.Env, bool) (link.Endpoint, error) { return ep, nil })
	defer SetConnector(nil)
	p := New()
	pl, err := p.Init(env)
	if err != nil || pl == nil {
		t.Fatalf("Init: %v (%s)", err, p.AbsentReason())
	}
	g := pl.(*group)
	t.Cleanup(func() {
		if err := g.Deinit(); err != nil {
			t.Errorf("Deinit: %v", err)
		}
	})
	return g
}

func cbuf(t *testing.T, n uint64) []byte {
	t.Helper()
	p, err := cmem.Malloc(n, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmem.Free(p) })
	return unsafe.Slice((*byte)(p), n)
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func TestDiscovery(t *testing.T) {
	j := startJob(t, 1, 2)
	g := j.connect(t, 0, mapEnv{})
	pls := g.Platforms()
	if len(pls) != 2 {
		t.Fatalf("%d platforms, want one per proxy", len(pls))
	}
	local := j.hostPl[0]
	for i, pl := range pls {
		want := "remote rank " + string(rune('1'+i)) + " (host pipe): " + local.Name()
		if pl.Name() != want || pl.Backend() != local.Backend() || pl.Vendor() != local.Vendor() || pl.Version() != local.Version() {
			t.Errorf("platform %q %v %q %q, want %q and the host platform's answers", pl.Name(), pl.Backend(), pl.Vendor(), pl.Version(), want)
		}
		devs := pl.Devices()
		if len(devs) != 1 || devs[0].IsHost() {
			t.Fatalf("want one device whose memory is not ours")
		}
		if !reflect.DeepEqual(*devs[0].Info(), *local.Devices()[0].Info()) {
			t.Errorf("remote info %+v differs from the proxied device's %+v", *devs[0].Info(), *local.Devices()[0].Info())
		}
	}
}

func TestOff(t *testing.T) {
	called := false
	SetConnector(func(plugin.Env, bool) (link.Endpoint, error) { called = true; return nil, nil })
	defer SetConnector(nil)
	p := New()
	if pl, err := p.Init(mapEnv{EnvRemote: "off"}); pl != nil || err != nil || called {
		t.Fatalf("OFFLOAD_REMOTE=off: %v %v (connector called: %v)", pl, err, called)
	}
	if pl, err := p.Init(mapEnv{}); pl != nil || err != nil || !strings.Contains(p.AbsentReason(), "not part of an MPI launch") {
		t.Fatalf("no endpoint: %v %v %q", pl, err, p.AbsentReason())
	}
	if _, err := p.Init(mapEnv{EnvRemote: "tcp"}); err == nil {
		t.Fatal("OFFLOAD_REMOTE=tcp accepted")
	}
	if _, err := p.Init(mapEnv{EnvTimeout: "soon"}); err == nil {
		t.Fatal("OFFLOAD_REMOTE_TIMEOUT=soon accepted")
	}
}

func dev0(g *group) *Device { return g.Platforms()[0].Devices()[0].(*Device) }

func TestCopiesAndFill(t *testing.T) {
	for _, chunk := range []string{"", "4096"} {
		j := startJob(t, 1, 1)
		d := dev0(j.connect(t, 0, mapEnv{EnvChunk: chunk}))
		const n = 9<<20 + 13
		if _, err := d.Alloc(ol.AllocTypeHost, 64); err == nil || !strings.Contains(err.Error(), "remote rank 1") {
			t.Fatalf("HOST allocation: %v", err)
		}
		if _, err := d.Register(1<<20, 64); codeOf(err) != ol.ErrcUnsupported {
			t.Fatalf("Register: %v", err)
		}
		p, err := d.Alloc(ol.AllocTypeDevice, n)
		if err != nil {
			t.Fatal(err)
		}
		src, back := cbuf(t, n), cbuf(t, n)
		for i := range src {
			src[i] = byte(i*7 + i>>12)
		}
		q, err := d.NewQueue()
		if err != nil {
			t.Fatal(err)
		}
		if err := q.CopyToDevice(p, d, addr(src), n); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyFromDevice(addr(back), p, d, n); err != nil {
			t.Fatal(err)
		}
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(src, back) {
			t.Fatalf("chunk %q: %d bytes read back differ", chunk, n)
		}
		// fill the middle with a 4-byte pattern, copy within the device
		p2, err := d.Alloc(ol.AllocTypeDevice, n)
		if err != nil {
			t.Fatal(err)
		}
		pat := []byte{1, 2, 3, 4}
		if err := q.Fill(p+100, unsafe.Pointer(&pat[0]), 4, 4000); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyDevice(p2, d, p, d, n); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyFromDevice(addr(back), p2, d, n); err != nil {
			t.Fatal(err)
		}
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range back {
			want := src[i]
			if i >= 100 && i < 4100 {
				want = byte(i-100)%4 + 1
			}
			if back[i] != want {
				t.Fatalf("byte %d is %d, want %d", i, back[i], want)
			}
		}
		if err := q.Release(); err != nil {
			t.Fatal(err)
		}
		for _, a := range []uintptr{p, p2} {
			if err := d.Free(a, ol.AllocTypeDevice); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Free(p, ol.AllocTypeDevice); err == nil || !strings.Contains(err.Error(), "remote rank 1 (host pipe)") {
			t.Fatalf("double free: %v", err)
		}
	}
}

func buildKernel(t *testing.T, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".so")
	cmd := exec.Command("gcc", "-std=gnu17", "-O2", "-fPIC", "-shared", "-I../../include", "../../tests/c/kernels/"+name+".c", "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", name, err, msg)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestProgramLaunchEvents(t *testing.T) {
	img := buildKernel(t, "foo")
	j := startJob(t, 1, 1)
	d := dev0(j.connect(t, 0, mapEnv{}))
	if !d.IsValidBinary(img) || d.IsValidBinary([]byte("not an image")) {
		t.Fatal("IsValidBinary does not give the proxy's answers")
	}
	if _, err := d.LoadProgram([]byte("not an image")); err == nil {
		t.Fatal("a bad image loaded")
	}
	prog, err := d.LoadProgram(img)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("foo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Kernel("nope"); err == nil {
		t.Fatal("a missing kernel was found")
	}
	if n, err := k.MaxGroupSize(0); err != nil || n == 0 {
		t.Fatalf("MaxGroupSize %d %v", n, err)
	}
	const groups, size = 8, 64
	out, err := d.Alloc(ol.AllocTypeDevice, groups*size*4)
	if err != nil {
		t.Fatal(err)
	}
	q1, _ := d.NewQueue()
	q2, _ := d.NewQueue()
	tq := q1.(plugin.TimedQueue)
	start, err := tq.RecordTimed()
	if err != nil {
		t.Fatal(err)
	}
	args := binary.LittleEndian.AppendUint64(nil, uint64(out))
	ls := plugin.LaunchSize{NumGroups: ol.Dimensions{X: groups, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: size, Y: 1, Z: 1}}
	if err := q1.Launch(k, args, ls); err != nil {
		t.Fatal(err)
	}
	end, _ := tq.RecordTimed()
	// q2 reads the result only after q1's launch: through the event
	if err := q2.Wait(end); err != nil {
		t.Fatal(err)
	}
	back := cbuf(t, groups*size*4)
	if err := q2.CopyFromDevice(addr(back), out, d, groups*size*4); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < groups*size; i++ {
		if v := binary.LittleEndian.Uint32(back[4*i:]); v != uint32(i) {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
	if err := end.Sync(); err != nil || !end.Done() {
		t.Fatalf("event: %v", err)
	}
	if ms, err := end.ElapsedSince(start); err != nil || ms < 0 {
		t.Fatalf("elapsed %v %v", ms, err)
	}
	if !q1.Empty() {
		t.Fatal("a synced queue is not empty")
	}
	for _, e := range []plugin.Event{start, end} {
		if err := e.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// a launch of an unloaded program's kernel is an error at the next sync
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := q1.Launch(k, args, ls); err != nil {
		t.Fatal(err)
	}
	if err := q1.Sync(); err == nil || !strings.Contains(err.Error(), "no kernel") {
		t.Fatalf("launch after unload: %v", err)
	}
	q1.Release()
	q2.Release()
	d.Free(out, ol.AllocTypeDevice)
}

func TestHostCallsInOrder(t *testing.T) {
	j := startJob(t, 1, 1)
	d := dev0(j.connect(t, 0, mapEnv{}))
	const n = 1 << 16
	p, err := d.Alloc(ol.AllocTypeDevice, n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(p, ol.AllocTypeDevice)
	src, back := cbuf(t, n), cbuf(t, n)
	for i := range src {
		src[i] = byte(i)
	}
	q, _ := d.NewQueue()
	defer q.Release()
	q.CopyToDevice(p, d, addr(src), n)
	q.CopyFromDevice(addr(back), p, d, n)
	var sawData atomic.Bool
	release := make(chan struct{})
	q.HostCall(func() error {
		// runs after the copy back reached this process
		sawData.Store(bytes.Equal(src, back))
		<-release
		return nil
	})
	zero := []byte{0}
	q.Fill(p, unsafe.Pointer(&zero[0]), 1, n)
	q.HostCall(func() error { return ol.NewError(ol.ErrcInvalidValue, "host call failed on purpose") })
	time.Sleep(50 * time.Millisecond)
	if q.Empty() {
		t.Fatal("the queue is empty while a host call holds it")
	}
	close(release)
	err = q.Sync()
	if !sawData.Load() {
		t.Fatal("the host call ran before the copy's bytes arrived")
	}
	if codeOf(err) != ol.ErrcInvalidValue || !strings.Contains(err.Error(), "on purpose") {
		t.Fatalf("Sync after a failing host call: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Fatalf("the error was reported twice: %v", err)
	}
}

func TestClientsKeptApart(t *testing.T) {
	j := startJob(t, 2, 1)
	a := dev0(j.connect(t, 0, mapEnv{}))
	b := dev0(j.connect(t, 1, mapEnv{}))
	pa, err := a.Alloc(ol.AllocTypeDevice, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(pa, ol.AllocTypeDevice); err == nil {
		t.Fatal("client 1 freed client 0's allocation")
	}
	// B's queue ids name nothing of A's: a raw request for a queue of A's
	qa, _ := a.NewQueue()
	defer qa.Release()
	qb := &Queue{d: b, c: b.c, id: qa.(*Queue).id}
	if err := qb.Sync(); err == nil || !strings.Contains(err.Error(), "no queue") {
		t.Fatalf("client 1 synced client 0's queue: %v", err)
	}
	if err := a.Free(pa, ol.AllocTypeDevice); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedAndHostileRequests(t *testing.T) {
	j := startJob(t, 1, 1)
	d := dev0(j.connect(t, 0, mapEnv{}))
	ep := j.ends[0]
	for _, b := range [][]byte{{}, {0}, {200, 1, 2}, {byte(wire.OpCopyTo), 1, 2, 3, 4, 90}} {
		if err := ep.Send(1, b, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := d.NewQueue()
	defer q.Release()
	rq := q.(*Queue)
	// the proxy is in this process: victim is memory of the proxy's
	// process that no client allocated
	victim := cbuf(t, 4)
	copy(victim, []byte{0xaa, 0xbb, 0xcc, 0xdd})
	own, err := d.Alloc(ol.AllocTypeDevice, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(own, ol.AllocTypeDevice)
	// requests that decode but name nothing or wrap around: errors at sync
	for _, tc := range []struct {
		op   wire.Op
		data []byte
		args []uint64
	}{
		{wire.OpCopyTo, []byte{1, 2}, []uint64{rq.id, 99, 0}},
		{wire.OpCopyTo, []byte{1, 2}, []uint64{rq.id, 0, 1<<64 - 1}},
		{wire.OpCopyFrom, nil, []uint64{rq.id, 0, 0x1000, 1 << 62, 5}},
		{wire.OpFill, nil, []uint64{rq.id, 0x1000, 16}},
		{wire.OpFill, []byte{1, 2, 3}, []uint64{rq.id, 0x1000, 16}},
		{wire.OpLaunch, nil, []uint64{rq.id, 12345}},
		{wire.OpWait, nil, []uint64{rq.id, 777}},
		{wire.OpCopyTo, []byte{1}, []uint64{424242, 0, 0}},
		// memory the client did not allocate: the proxy's own, never touched
		{wire.OpCopyTo, []byte{1, 2, 3, 4}, []uint64{rq.id, 0, uint64(addr(victim))}},
		{wire.OpCopyFrom, nil, []uint64{rq.id, 0, uint64(addr(victim)), 4, 6}},
		{wire.OpFill, []byte{9}, []uint64{rq.id, uint64(addr(victim)), 4}},
		{wire.OpCopyDevice, nil, []uint64{rq.id, 0, uint64(own), 0, uint64(addr(victim)), 4}},
		{wire.OpCopyDevice, nil, []uint64{rq.id, 0, uint64(addr(victim)), 0, uint64(own), 4}},
		{wire.OpCopyTo, make([]byte, 65), []uint64{rq.id, 0, uint64(own)}}, // past its end
	} {
		if err := d.c.post(tc.op, tc.data, tc.args...); err != nil {
			t.Fatal(err)
		}
		if err := q.Sync(); err == nil {
			t.Errorf("%v %v was accepted", tc.op, tc.args)
		}
	}
	if _, err := d.c.call(wire.OpAlloc, nil, "", 5, uint64(ol.AllocTypeDevice), 64); err == nil {
		t.Error("allocation on device 5 of a one-device proxy")
	}
	if _, err := d.c.call(wire.OpAlloc, nil, "", 0, 99, 64); err == nil {
		t.Error("allocation of kind 99")
	}
	if _, err := d.c.call(wire.OpHello, nil, "", wire.Version+1); err == nil {
		t.Error("a later protocol version was accepted")
	}
	// the proxy still works, and nothing reached the victim
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(victim, []byte{0xaa, 0xbb, 0xcc, 0xdd}) {
		t.Fatalf("a hostile request wrote % x over memory no client allocated", victim)
	}
}

func TestProxyStopsAnswering(t *testing.T) {
	j := startJob(t, 1, 2)
	g := j.connect(t, 0, mapEnv{EnvTimeout: "300ms"})
	d1 := g.Platforms()[0].Devices()[0].(*Device)
	d2 := g.Platforms()[1].Devices()[0].(*Device)
	q1, _ := d1.NewQueue()
	p, err := d1.Alloc(ol.AllocTypeDevice, 64)
	if err != nil {
		t.Fatal(err)
	}
	_ = p
	// proxy 1 goes silent: what it receives is dropped
	j.ends[1].Close()
	zero := []byte{0}
	q1.Fill(p, unsafe.Pointer(&zero[0]), 1, 64)
	t0 := time.Now()
	err = q1.Sync()
	if err == nil || !strings.Contains(err.Error(), "remote rank 1 (host pipe)") || codeOf(err) != ol.ErrcBackendFailure {
		t.Fatalf("sync on a silent proxy: %v", err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("the sync took %v with a 300 ms timeout", el)
	}
	if _, err := d1.Alloc(ol.AllocTypeDevice, 64); err == nil {
		t.Fatal("a dead proxy's device allocated")
	}
	// the other proxy keeps working
	p2, err := d2.Alloc(ol.AllocTypeDevice, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Free(p2, ol.AllocTypeDevice); err != nil {
		t.Fatal(err)
	}
	if err := q1.Release(); err != nil {
		t.Fatal(err)
	}
	// Deinit completes (the dead proxy gets no Bye)
	if err := g.Platforms()[0].Deinit(); err != nil {
		t.Fatal(err)
	}
}

// a long kernel is not a dead proxy: pings keep the wait going
func TestSlowWorkIsNotDeath(t *testing.T) {
	j := startJob(t, 1, 1)
	d := dev0(j.connect(t, 0, mapEnv{EnvTimeout: "200ms"}))
	q, _ := d.NewQueue()
	defer q.Release()
	// a host call on the client holds the proxy's queue for 1 s: the
	// client's sync waits, the proxy answers pings meanwhile
	q.HostCall(func() error { time.Sleep(time.Second); return nil })
	if err := q.Sync(); err != nil {
		t.Fatalf("a queue busy for 5 timeouts was taken for a dead proxy: %v", err)
	}
}

func codeOf(err error) ol.Errc {
	var oe *ol.Error
	if errors.As(err, &oe) {
		return oe.Code
	}
	return ol.ErrcSuccess
}

// countingEnd counts the messages a client sends.
type countingEnd struct {
	*link.PipeEnd
	sends atomic.Int64
}

func (e *countingEnd) Send(rank int, msg []byte, timeout time.Duration) error {
	e.sends.Add(1)
	return e.PipeEnd.Send(rank, msg, timeout)
}

// Launches queued before a sync go in batches, far fewer messages than
// launches, and run complete and in order: each Fibonacci step reads the
// two before it (a lost, repeated or reordered launch changes the numbers).
func TestBatchedLaunchesInOrder(t *testing.T) {
	img := buildKernel(t, "sequence")
	j := startJob(t, 1, 1)
	ep := &countingEnd{PipeEnd: j.ends[0]}
	d := dev0(connectVia(t, ep, mapEnv{}))
	prog, err := d.LoadProgram(img)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Unload()
	k, err := prog.Kernel("sequence")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	out, err := d.Alloc(ol.AllocTypeDevice, n*4)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(out, ol.AllocTypeDevice)
	q, _ := d.NewQueue()
	defer q.Release()
	seed := cbuf(t, 8)
	binary.LittleEndian.PutUint32(seed, 0)
	binary.LittleEndian.PutUint32(seed[4:], 1)
	if err := q.CopyToDevice(out, d, addr(seed), 8); err != nil {
		t.Fatal(err)
	}
	ls := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}
	before := ep.sends.Load()
	for i := 2; i < n; i++ {
		args := binary.LittleEndian.AppendUint64(nil, uint64(out))
		args = binary.LittleEndian.AppendUint32(args, uint32(i))
		args = append(args, 0, 0, 0, 0) // the struct's tail padding
		if err := q.Launch(k, args, ls); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	sent := ep.sends.Load() - before
	t.Logf("%d launches and a sync: %d messages", n-2, sent)
	// a batch goes at 32 KiB or 50 µs after its first launch: how many
	// share a message depends on the machine's speed (24 messages idle,
	// 330 under -race on a loaded machine; one each without batching)
	if sent > n/5 {
		t.Fatalf("%d launches and a sync took %d messages", n-2, sent)
	}
	back := cbuf(t, n*4)
	if err := q.CopyFromDevice(addr(back), out, d, n*4); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	a, b := uint32(0), uint32(1)
	for i := 0; i < n; i++ {
		if v := binary.LittleEndian.Uint32(back[4*i:]); v != a {
			t.Fatalf("out[%d] = %d, want %d", i, v, a)
		}
		a, b = b, a+b
	}
}

// pollingEnd is a Pipe end taken as a link.Poller, as MPI's is (with no
// spin: its receiver goroutine polls).
type pollingEnd struct{ *link.PipeEnd }

func (e pollingEnd) TryRecv() (int, []byte, bool, error) {
	src, b, err := e.Recv(time.Microsecond)
	if errors.Is(err, link.ErrTimeout) {
		return 0, nil, false, nil
	}
	return src, b, err == nil, err
}

func (e pollingEnd) Spin() time.Duration { return 0 }

// A post waits in its batch no longer than about batchAge, also when the
// application then waits for something that sends the proxy nothing: here
// a host call that this process waits for. Without a Poller a timer
// sends the batch, with one the receiver.
func TestBatchSentWithoutSync(t *testing.T) {
	for _, polling := range []bool{false, true} {
		j := startJob(t, 1, 1)
		var ep link.Endpoint = j.ends[0]
		if polling {
			ep = pollingEnd{j.ends[0]}
		}
		d := dev0(connectVia(t, ep, mapEnv{}))
		q, _ := d.NewQueue()
		ran := make(chan struct{})
		if err := q.HostCall(func() error { close(ran); return nil }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatalf("a queued host call did not reach the proxy without a sync (Poller: %v)", polling)
		}
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
		q.Release()
	}
}

// A proxy's message the transport could not keep (a copy's bytes, an
// answer) fails that proxy's devices with OUT_OF_RESOURCES; the other
// proxy's keep working.
func TestDroppedMessageFailsItsProxy(t *testing.T) {
	j := startJob(t, 1, 2)
	ep := j.ends[0]
	g := connectVia(t, ep, mapEnv{})
	ps := g.Platforms()
	a, b := ps[0].Devices()[0].(*Device), ps[1].Devices()[0].(*Device)
	qa, err := a.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Release()
	qb, err := b.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer qb.Release()
	ep.Drop(&link.DroppedError{Src: a.c.rank, Size: 4 << 20, Err: errors.New("no memory here")})
	err = qa.Sync()
	if codeOf(err) != ol.ErrcOutOfResources || !strings.Contains(err.Error(), "4194304 bytes") || !strings.Contains(err.Error(), a.c.where()) {
		t.Fatalf("a sync on the proxy whose message was dropped: %v", err)
	}
	if err := qb.Sync(); err != nil {
		t.Fatalf("the other proxy: %v", err)
	}
}
