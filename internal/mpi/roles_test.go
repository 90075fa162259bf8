package mpi

// The roles this test binary plays when it runs as a rank of an MPI job
// (TestMPMD launches it: -np 1 <test> -linkcheck=client : -np 2 <test>
// -linkcheck=proxy) or as an MPI singleton (TestAppInit*). Each check the
// client makes prints "PASS name" or "FAIL name: why".

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// runRole runs the role named by a -linkcheck= argument, if any, and
// returns the process's exit status.
func runRole(args []string) (int, bool) {
	for _, a := range args {
		if r, ok := strings.CutPrefix(a, "-linkcheck="); ok {
			switch r {
			case "client":
				return roleClient(), true
			case "proxy":
				return roleProxy(), true
			case "idle":
				// a rank that never ends (no MPI): for the launcher's bound
				time.Sleep(time.Hour)
				return 0, true
			case "appinit-single", "appinit-multiple":
				return roleAppInit(r), true
			case "finalize-bound":
				return roleFinalizeBound(), true
			case "holdout":
				return roleHoldout(), true
			}
			fmt.Fprintf(os.Stderr, "unknown role %q\n", r)
			return 2, true
		}
	}
	return 0, false
}

// The proxy's commands: the first byte of a message.
const (
	opEcho   = 'E' // send the message back
	opSum    = 'S' // answer 'S' and the SHA-256 of the rest
	opSeq    = 'C' // ['C', goroutine, seq u32]: check each goroutine's order
	opCount  = 'Q' // answer "ok N" or the first order violation seen
	opKill   = 'K' // SIGKILL itself
	opHang   = 'H' // stop receiving, for hangFor
	opNap    = 'N' // stop receiving, for 300 ms
	opExit   = 'X' // close, finalize and end
	opPlace  = 'P' // a head the proxy's placer takes: answer the head and the SHA-256 of the body
	opStarve = 'M' // the next large message finds no memory: answer "dropped SIZE HEAD"
)

const hangFor = 3 * time.Second

func roleProxy() int {
	ep, err := Open(link.Proxy, 30*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	// bodies after an opPlace head go into C memory the placer chose
	ep.(link.Placer).SetPlace(func(src int, head []byte, n int) (unsafe.Pointer, func(error, bool)) {
		if len(head) == 0 || head[0] != opPlace {
			return nil, nil
		}
		buf, err := cmem.Malloc(uint64(n), "a placed body")
		if err != nil {
			return nil, nil
		}
		return buf, func(err error, lost bool) {
			reply := fmt.Appendf(nil, "placing failed: %v", err)
			if err == nil {
				sum := sha256.Sum256(unsafe.Slice((*byte)(buf), n))
				reply = append(slices.Clone(head), sum[:]...)
			}
			if !lost {
				cmem.Free(buf)
			}
			if err := ep.Send(src, reply, 30*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "proxy: send:", err)
			}
		}
	})
	var starve atomic.Bool
	messageMemory = func(n uint64) (unsafe.Pointer, error) {
		if starve.CompareAndSwap(true, false) {
			return nil, errors.New("no memory (the test's)")
		}
		return cmem.Malloc(n, "a received message")
	}
	type key struct{ src, g int }
	last := map[key]uint32{}
	count, bad := 0, ""
	var msg []byte
	for {
		link.Free(ep, msg) // the last message's memory
		var src int
		var err error
		src, msg, err = ep.Recv(0)
		var dropped *link.DroppedError
		if errors.As(err, &dropped) {
			if err := ep.Send(dropped.Src, fmt.Appendf(nil, "dropped %d % x", dropped.Size, dropped.Head), 30*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "proxy: send:", err)
			}
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "proxy: recv:", err)
			return 1
		}
		if len(msg) == 0 {
			ep.Send(src, nil, 10*time.Second)
			continue
		}
		var reply []byte
		switch msg[0] {
		case opEcho:
			reply = msg
		case opSum:
			s := sha256.Sum256(msg[1:])
			reply = append([]byte{opSum}, s[:]...)
		case opSeq:
			k := key{src, int(msg[1])}
			seq := binary.LittleEndian.Uint32(msg[2:])
			if seq != last[k]+1 && bad == "" {
				bad = fmt.Sprintf("goroutine %d: seq %d after %d", k.g, seq, last[k])
			}
			last[k] = seq
			count++
		case opCount:
			if bad != "" {
				reply = []byte(bad)
			} else {
				reply = fmt.Appendf(nil, "ok %d", count)
			}
		case opKill:
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case opHang:
			time.Sleep(hangFor)
		case opNap:
			time.Sleep(300 * time.Millisecond)
		case opStarve:
			starve.Store(true)
		default:
			// the transport delivered what no client sent as a message
			if bad == "" {
				bad = fmt.Sprintf("unexpected message % x", msg[:min(len(msg), 16)])
			}
			continue
		case opExit:
			ep.Close()
			if err := Finalize(); err != nil {
				fmt.Fprintln(os.Stderr, "proxy: finalize:", err)
				return 1
			}
			return 0
		}
		if reply != nil {
			if err := ep.Send(src, reply, 30*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "proxy: send:", err)
			}
		}
	}
}

type checker struct{ failed bool }

func (c *checker) report(name string, err error) {
	if err != nil {
		c.failed = true
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("PASS %s\n", name)
}

// pattern is n bytes that differ with seed and position.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ byte(i>>9) ^ seed
	}
	return b
}

func roleClient() int {
	c := &checker{}
	c.report("launched", func() error {
		if u, err := Use(Getenv); !Launched(Getenv) || !u || err != nil {
			return fmt.Errorf("under mpirun: Launched %v, Use %v, %v", Launched(Getenv), u, err)
		}
		return nil
	}())
	start := time.Now()
	ep, err := Open(link.Client, 30*time.Second)
	if err != nil {
		c.report("open", err)
		return 1
	}
	fmt.Printf("client: rank %d on %s, discovery %v\n", ep.Rank(), ep.Host(), time.Since(start).Round(time.Millisecond))
	// Open MPI installs signal handlers of its own at MPI_Init: Go's must
	// still turn a nil dereference into a panic
	c.report("go signals", func() (err error) {
		defer func() {
			if recover() == nil {
				err = fmt.Errorf("no panic")
			}
		}()
		var p *[2]int
		p[1]++
		return fmt.Errorf("no fault")
	}())
	ps := ep.Proxies()
	c.report("discovery", func() error {
		// launched as -np 1 client : -np 2 proxy: ranks 1 and 2
		if len(ps) != 2 || ps[0].Rank != 1 || ps[1].Rank != 2 {
			return fmt.Errorf("proxies %+v, want ranks 1 and 2", ps)
		}
		host, _ := os.Hostname()
		for _, p := range ps {
			if p.Role != link.Proxy || p.Host == "" || !strings.HasPrefix(host, p.Host) && !strings.HasPrefix(p.Host, host) {
				return fmt.Errorf("proxy %+v: want role proxy on %s", p, host)
			}
		}
		return nil
	}())
	if len(ps) != 2 {
		return 1
	}
	p1, p2 := ps[0].Rank, ps[1].Rank
	recvFrom := func(want int, timeout time.Duration) ([]byte, error) {
		src, msg, err := ep.Recv(timeout)
		if err != nil {
			return nil, err
		}
		if src != want {
			return nil, fmt.Errorf("message from rank %d, want %d", src, want)
		}
		return msg, nil
	}

	// Ordered delivery over every size class: empty, copied, at the copy
	// limit, past it (header + payload), to both proxies at once.
	c.report("ordered echo", func() error {
		sizes := []int{1, 2, 100, inlineMax - 1, inlineMax, inlineMax + 1, 3 << 20, 17}
		const rounds = 50
		// messages over 64 KiB are taken only by a receiving peer: receive
		// while sending, as the remote plugin does
		done := make(chan error, 1)
		go func() {
			got := map[int]int{}
			for k := 0; k < 2*rounds*len(sizes); k++ {
				src, msg, err := ep.Recv(20 * time.Second)
				if err != nil {
					done <- err
					return
				}
				j := got[src]
				got[src]++
				r, i := j/len(sizes), j%len(sizes)
				want := pattern(sizes[i], byte(r*len(sizes)+i))
				want[0] = opEcho
				if !bytes.Equal(msg, want) {
					done <- fmt.Errorf("message %d from rank %d: %d bytes differ from the %d sent (out of order or damaged)", j, src, len(msg), len(want))
					return
				}
			}
			done <- nil
		}()
		for r := 0; r < rounds; r++ {
			for i, n := range sizes {
				for _, p := range []int{p1, p2} {
					m := pattern(n, byte(r*len(sizes)+i))
					m[0] = opEcho
					if err := ep.Send(p, m, 10*time.Second); err != nil {
						return err
					}
				}
			}
		}
		return <-done
	}())

	c.report("empty message", func() error {
		if err := ep.Send(p1, nil, time.Second); err != nil {
			return err
		}
		m, err := recvFrom(p1, 10*time.Second)
		if err == nil && len(m) != 0 {
			err = fmt.Errorf("%d bytes back", len(m))
		}
		return err
	}())

	c.report("64 MiB message", func() error {
		m := pattern(64<<20, 0x5a)
		m[0] = opSum
		t0 := time.Now()
		if err := ep.Send(p2, m, 30*time.Second); err != nil {
			return err
		}
		r, err := recvFrom(p2, 30*time.Second)
		if err != nil {
			return err
		}
		s := sha256.Sum256(m[1:])
		if !bytes.Equal(r, append([]byte{opSum}, s[:]...)) {
			return fmt.Errorf("the proxy's SHA-256 differs")
		}
		m[0] = opEcho
		if err := ep.Send(p2, m, 30*time.Second); err != nil {
			return err
		}
		r, err = recvFrom(p2, 30*time.Second)
		if err == nil && !bytes.Equal(r, m) {
			err = fmt.Errorf("the echo differs")
		}
		fmt.Printf("client: 64 MiB there, its sum back, and back whole: %v\n", time.Since(t0).Round(time.Millisecond))
		return err
	}())

	// A message sent in two parts (SendParts): a head the proxy's placer
	// takes has its body received into the placer's memory (the proxy
	// answers the head and the body's SHA-256, and the message itself is
	// never delivered); one it refuses arrives whole; with a body of
	// several chunks too; and messages after them keep their order.
	c.report("placed message", func() error {
		g := ep.(link.Gatherer)
		chunkBytes.Store(1<<20 + 7)
		defer chunkBytes.Store(1 << 30)
		for i, n := range []int{inlineMax + 1, 3<<20 + 5} {
			body := pattern(n, byte(0x44+i))
			head := []byte{opPlace, byte(i), 2, 3}
			if err := g.SendParts(p2, head, body, 30*time.Second); err != nil {
				return err
			}
			whole := []byte{opEcho, byte(i)}
			if err := g.SendParts(p2, whole, body, 30*time.Second); err != nil {
				return err
			}
			r, err := recvFrom(p2, 30*time.Second)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(body)
			if want := append(head, sum[:]...); !bytes.Equal(r, want) {
				return fmt.Errorf("%d bytes placed: the proxy answered %q, want the head and the body's SHA-256", n, r[:min(len(r), 64)])
			}
			if r, err = recvFrom(p2, 30*time.Second); err != nil {
				return err
			}
			if want := append(whole, body...); !bytes.Equal(r, want) {
				return fmt.Errorf("%d bytes refused by the placer: %d bytes came back, differing from the %d sent", n, len(r), len(want))
			}
		}
		return nil
	}())

	// A large message the proxy has no memory for (opStarve makes the next
	// allocation fail) is received and dropped: Recv's DroppedError has
	// its size and head, and later messages, large ones included, come
	// whole and in order. With a body of several chunks too.
	c.report("dropped message", func() error {
		g := ep.(link.Gatherer)
		chunkBytes.Store(1<<20 + 7)
		defer chunkBytes.Store(1 << 30)
		for i, n := range []int{inlineMax + 1, 3<<20 + 5} {
			if err := ep.Send(p2, []byte{opStarve}, 30*time.Second); err != nil {
				return err
			}
			head := []byte{opEcho, 'd', byte(i)}
			if err := g.SendParts(p2, head, pattern(n, byte(0x55+i)), 30*time.Second); err != nil {
				return err
			}
			after := pattern(n+1, byte(0x66+i))
			after[0] = opEcho
			if err := ep.Send(p2, after, 30*time.Second); err != nil {
				return err
			}
			r, err := recvFrom(p2, 30*time.Second)
			if err != nil {
				return err
			}
			if want := fmt.Appendf(nil, "dropped %d % x", len(head)+n, head); !bytes.Equal(r, want) {
				return fmt.Errorf("%d bytes without memory: the proxy answered %q, want %q", n, r[:min(len(r), 64)], want)
			}
			if r, err = recvFrom(p2, 30*time.Second); err != nil {
				return err
			}
			if !bytes.Equal(r, after) {
				return fmt.Errorf("after %d bytes dropped: %d bytes came back, differing from the %d sent", n, len(r), len(after))
			}
		}
		return nil
	}())

	// MPI's int count caps a chunk at 2 GiB - 1: a message past the chunk
	// size goes in several, each on the message's tag (here with chunks
	// of 1 MiB + 7 bytes, the proxies' own stay 1 GiB: the header says)
	c.report("chunked message", func() error {
		chunkBytes.Store(1<<20 + 7)
		defer chunkBytes.Store(1 << 30)
		m := pattern(5<<20+3, 0x33)
		m[0] = opEcho
		if err := ep.Send(p1, m, 30*time.Second); err != nil {
			return err
		}
		r, err := recvFrom(p1, 30*time.Second)
		if err == nil && !bytes.Equal(r, m) {
			err = fmt.Errorf("the echo differs")
		}
		return err
	}())

	// Messages on the transport's tag that are not its own (another user
	// of the tag): dropped, never delivered, and later messages still
	// arrive (the proxy reports any delivered).
	c.report("foreign messages", func() error {
		big := make([]byte, bigHeader)
		big[0] = kindBig
		binary.LittleEndian.PutUint32(big[4:], tagChunk0)
		binary.LittleEndian.PutUint64(big[8:], MaxMessage+1) // too large
		binary.LittleEndian.PutUint64(big[16:], 1<<20)
		short := []byte{kindBig, 0, 0, 0, 1, 2, 3} // a header of the wrong size
		for _, m := range [][]byte{nil, {9, 1, 2}, big, short, make([]byte, inlineMax+headerBytes+1), {kindReply, 1}} {
			if err := sendRaw(p1, TagBase, m); err != nil {
				return err
			}
		}
		m := pattern(100, 7)
		m[0] = opEcho
		if err := ep.Send(p1, m, time.Second); err != nil {
			return err
		}
		r, err := recvFrom(p1, 10*time.Second)
		if err != nil {
			return err
		}
		if !bytes.Equal(r, m) {
			return fmt.Errorf("the echo after them differs")
		}
		if err := ep.Send(p1, []byte{opCount}, time.Second); err != nil {
			return err
		}
		r, err = recvFrom(p1, 10*time.Second)
		if err == nil && string(r) != "ok 0" {
			err = fmt.Errorf("proxy says %q", r)
		}
		return err
	}())

	c.report("concurrent senders", func() error {
		const gs, per = 8, 300
		var wg sync.WaitGroup
		errs := make(chan error, gs)
		for g := 0; g < gs; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := uint32(1); s <= per; s++ {
					m := make([]byte, 6, 6+int(s%5)*40000)
					m[0], m[1] = opSeq, byte(g)
					binary.LittleEndian.PutUint32(m[2:], s)
					m = m[:cap(m)] // some past the copy limit
					if err := ep.Send(p1, m, 10*time.Second); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		if err := ep.Send(p1, []byte{opCount}, time.Second); err != nil {
			return err
		}
		r, err := recvFrom(p1, 10*time.Second)
		if err == nil && string(r) != fmt.Sprintf("ok %d", gs*per) {
			err = fmt.Errorf("proxy says %q", r)
		}
		return err
	}())

	// Small messages to a proxy that is not receiving for a while: MPI
	// cannot take them all at once (its shared-memory queue fills), so
	// some stay in flight from their copies; all arrive, in order.
	c.report("small messages not taken at once", func() error {
		if err := ep.Send(p1, []byte{opNap}, time.Second); err != nil {
			return err
		}
		const burst = 20000
		for s := uint32(1); s <= burst; s++ {
			m := make([]byte, 6+s%200)
			m[0], m[1] = opSeq, 200
			binary.LittleEndian.PutUint32(m[2:], s)
			if err := ep.Send(p1, m, 10*time.Second); err != nil {
				return err
			}
		}
		if err := ep.Send(p1, []byte{opCount}, time.Second); err != nil {
			return err
		}
		r, err := recvFrom(p1, 10*time.Second)
		if err == nil && string(r) != fmt.Sprintf("ok %d", 8*300+burst) {
			err = fmt.Errorf("proxy says %q", r)
		}
		if err == nil {
			fmt.Printf("client: %d small sends not taken at once\n", stagedLeft.Load())
		}
		return err
	}())

	c.report("receive timeout", func() error {
		t0 := time.Now()
		_, _, err := ep.Recv(100 * time.Millisecond)
		el := time.Since(t0)
		if err != link.ErrTimeout {
			return fmt.Errorf("got %v, want link.ErrTimeout", err)
		}
		if el < 100*time.Millisecond || el > time.Second {
			return fmt.Errorf("returned after %v, want 100 ms", el)
		}
		return nil
	}())

	// A proxy that stops receiving: a large message is never taken, and
	// Send returns within its bound, naming the rank.
	c.report("peer not receiving", func() error {
		if err := ep.Send(p2, []byte{opHang}, time.Second); err != nil {
			return err
		}
		t0 := time.Now()
		err := ep.Send(p2, pattern(8<<20, 1), time.Second)
		el := time.Since(t0)
		if err == nil {
			return fmt.Errorf("send to a proxy that does not receive succeeded")
		}
		if !errors.Is(err, link.ErrTimeout) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d (", p2)) {
			return fmt.Errorf("error %q: want a timeout naming rank %d and its host", err, p2)
		}
		if el > 3*time.Second {
			return fmt.Errorf("send took %v, bound 1 s", el)
		}
		fmt.Printf("client: %v\n", err)
		// the destination is now failed: later sends fail at once
		t0 = time.Now()
		if err := ep.Send(p2, []byte{opEcho}, time.Second); err == nil || time.Since(t0) > 100*time.Millisecond {
			return fmt.Errorf("a send after the failure: %v after %v", err, time.Since(t0))
		}
		return nil
	}())

	// A proxy killed: MPI says nothing; sends to it are bounded, receives
	// time out, the other proxy keeps working.
	c.report("peer killed", func() error {
		if err := ep.Send(p1, []byte{opKill}, time.Second); err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		t0 := time.Now()
		err := ep.Send(p1, pattern(8<<20, 2), time.Second)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rank %d (", p1)) || time.Since(t0) > 3*time.Second {
			return fmt.Errorf("send to a dead proxy: %v after %v", err, time.Since(t0))
		}
		fmt.Printf("client: %v\n", err)
		if _, _, err := ep.Recv(200 * time.Millisecond); err != link.ErrTimeout {
			return fmt.Errorf("receive with a dead proxy: %v", err)
		}
		return nil
	}())

	ep.Close()
	c.report("closed", func() error {
		if _, _, err := ep.Recv(time.Second); err != link.ErrClosed {
			return fmt.Errorf("recv after close: %v", err)
		}
		if err := ep.Send(p2, []byte{1}, time.Second); err != link.ErrClosed {
			return fmt.Errorf("send after close: %v", err)
		}
		return nil
	}())

	// Second and third Opens in the same process (olInit after
	// olShutDown): MPI is kept. The hung proxy answers once it receives
	// again; the killed one never does. Without the launcher's application
	// contexts (srun --multi-prog), discovery asks every rank and waits for
	// all until its bound; with OFFLOAD_REMOTE_PROXY_RANKS, only for those.
	c.report("reopen without contexts", func() error {
		hide := func(k string) (string, bool) {
			if k == "OMPI_APP_CTX_NUM_PROCS" {
				return "", false
			}
			return Getenv(k)
		}
		t0 := time.Now()
		ep2, err := OpenWith(link.Client, Options{Library: DefaultLibrary, Discovery: 5 * time.Second, Stall: 5 * time.Second}, hide)
		if err != nil {
			return err
		}
		defer ep2.Close()
		el := time.Since(t0)
		if ps := ep2.Proxies(); len(ps) != 1 || ps[0].Rank != p2 {
			return fmt.Errorf("proxies %+v, want rank %d only", ps, p2)
		}
		if el < 4*time.Second {
			return fmt.Errorf("returned after %v: it should have waited for the dead rank %d until the 5 s bound", el, p1)
		}
		return nil
	}())
	c.report("reopen with proxy ranks", func() error {
		t0 := time.Now()
		ep3, err := OpenWith(link.Client, Options{Library: DefaultLibrary, Discovery: 20 * time.Second, Stall: 5 * time.Second, ProxyRanks: []int{p2}}, Getenv)
		if err != nil {
			return err
		}
		if ps := ep3.Proxies(); len(ps) != 1 || ps[0].Rank != p2 || time.Since(t0) > 10*time.Second {
			ep3.Close()
			return fmt.Errorf("proxies %+v after %v, want rank %d at once", ps, time.Since(t0), p2)
		}
		// At exit, a hook tells the proxy to end (as the remote plugin
		// tells its proxies) and MPI_Finalize, which waits for every rank,
		// returns: TestMPMD checks that the job ended well within the 60 s
		// bound after the hook.
		AtExit(func() {
			// the first endpoint's failure mark was its own
			err := ep3.Send(p2, []byte{opExit}, 5*time.Second)
			ep3.Close()
			fmt.Printf("client: exit hook: %v at %d\n", err, time.Now().UnixMilli())
		}, 60*time.Second)
		return nil
	}())
	code := 0
	if c.failed {
		code = 1
	}
	exitC(code)
	return code
}

// roleAppInit: an application initialised MPI itself (a singleton here);
// at MPI_THREAD_SINGLE Open must refuse and name the level, at
// MPI_THREAD_MULTIPLE it must reuse that MPI.
func roleAppInit(r string) int {
	lvl := 0
	if r == "appinit-multiple" {
		lvl = threadMultiple
	}
	got, err := initApp("", lvl)
	if err != nil {
		fmt.Println("FAIL init:", err)
		return 1
	}
	ep, err := Open(link.Client, time.Second)
	switch {
	case lvl == 0 && got < threadMultiple:
		if err == nil || !strings.Contains(err.Error(), levelName(got)) {
			fmt.Printf("FAIL open at %s: %v\n", levelName(got), err)
			return 1
		}
		fmt.Println("PASS refused:", err)
	case err != nil:
		fmt.Println("FAIL open:", err)
		return 1
	default:
		if ep.Rank() != 0 || len(ep.Proxies()) != 0 {
			fmt.Printf("FAIL rank %d, proxies %v\n", ep.Rank(), ep.Proxies())
			return 1
		}
		ep.Close()
		if err := Finalize(); err != nil { // not ours: a no-op
			fmt.Println("FAIL finalize:", err)
			return 1
		}
		fmt.Println("PASS reused")
	}
	return 0
}

// roleFinalizeBound finalizes within 2 s beside a rank that never does
// (holdout): Open MPI's MPI_Finalize waits for it, FinalizeWithin must not.
func roleFinalizeBound() int {
	if _, _, _, err := World(""); err != nil {
		fmt.Println("FAIL init:", err)
		return 1
	}
	t0 := time.Now()
	err := FinalizeWithin(2 * time.Second)
	el := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "did not return within 2s") || el > 10*time.Second {
		fmt.Printf("FAIL finalize bound: %v after %v\n", err, el)
		return 1
	}
	fmt.Printf("PASS finalize bound: %v after %v\n", err, el.Round(time.Millisecond))
	return 0
}

// roleHoldout initialises MPI, then stays 15 s and exits without
// MPI_Finalize.
func roleHoldout() int {
	if _, _, _, err := World(""); err != nil {
		fmt.Println("FAIL init:", err)
		return 1
	}
	time.Sleep(15 * time.Second)
	return 0
}
