// mpilink measures the MPI transport of the remote platform against MPI
// itself, on the same two ranks in the same run (a benchmark, not a test):
//
//	tests/remote/mpirun.sh -np 1 mpilink -role=client : -np 1 mpilink -role=proxy
//
// The client prints "key value" lines (times in ns, bandwidths in GB/s):
//
//	mpi_rtt_ns        MPI_Send + MPI_Recv round trip of 8 bytes
//	link_rtt_ns       the same through internal/mpi's Endpoint (Send, Recv)
//	link_rtt_idle_ns  the Endpoint's round trip after 2 ms idle (the peer
//	                  has backed off to sleeping)
//	mpi_oneway_ns     half of mpi_rtt_ns
//	mpi_stream_ns     per message, 10,000 messages of 8 bytes one way
//	link_stream_ns    the same through the Endpoint
//	mpi_bw_gbs        256 MiB one way, MPI_Send/MPI_Recv
//	link_bw_gbs       256 MiB one way through the Endpoint
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/liboffload-go/liboffload-go/internal/mpi"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

func main() {
	role := flag.String("role", "", "client or proxy")
	rounds := flag.Int("rounds", 5, "rounds of each measure (the median is printed)")
	flag.Parse()
	r := link.Client
	if *role == "proxy" {
		r = link.Proxy
	} else if *role != "client" {
		fmt.Fprintln(os.Stderr, "mpilink: -role=client or -role=proxy")
		os.Exit(2)
	}
	if err := run(r, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "mpilink:", err)
		os.Exit(1)
	}
}

func med(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

func run(role link.Role, rounds int) error {
	ep, err := mpi.Open(role, 30*time.Second)
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	defer ep.Close()
	client := role == link.Client
	var peer int
	if client {
		ps := ep.Proxies()
		if len(ps) != 1 {
			return fmt.Errorf("%d proxies, want 1", len(ps))
		}
		peer = ps[0].Rank
		// the proxy learns the client's rank from its first message
		if err := ep.Send(peer, []byte("hi"), time.Minute); err != nil {
			return err
		}
	} else {
		src, _, err := ep.Recv(time.Minute)
		if err != nil {
			return err
		}
		peer = src
	}
	const small, n, big = 8, 10000, 256 << 20
	msg := make([]byte, small)
	bigMsg := make([]byte, big)
	recv := func() ([]byte, error) {
		_, m, err := ep.Recv(time.Minute)
		return m, err
	}
	// one link round trip; the client starts it
	rtt := func() error {
		if client {
			if err := ep.Send(peer, msg, time.Minute); err != nil {
				return err
			}
			_, err := recv()
			return err
		}
		m, err := recv()
		if err == nil {
			err = ep.Send(peer, m, time.Minute)
		}
		link.Free(ep, m)
		return err
	}
	res := map[string][]float64{}
	add := func(k string, v float64) { res[k] = append(res[k], v) }
	for r := 0; r < rounds; r++ {
		d, err := mpi.RawPingPong(peer, small, n, client)
		if err != nil {
			return err
		}
		add("mpi_rtt_ns", float64(d.Nanoseconds())/n)
		add("mpi_oneway_ns", float64(d.Nanoseconds())/n/2)
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if err := rtt(); err != nil {
				return err
			}
		}
		add("link_rtt_ns", float64(time.Since(t0).Nanoseconds())/n)
		var idle time.Duration
		for i := 0; i < 100; i++ {
			time.Sleep(2 * time.Millisecond)
			t := time.Now()
			if err := rtt(); err != nil {
				return err
			}
			idle += time.Since(t)
		}
		add("link_rtt_idle_ns", float64(idle.Nanoseconds())/100)
		d, err = mpi.RawStream(peer, small, n, client)
		if err != nil {
			return err
		}
		add("mpi_stream_ns", float64(d.Nanoseconds())/n)
		t0 = time.Now()
		for i := 0; i < n; i++ {
			if client {
				err = ep.Send(peer, msg, time.Minute)
			} else {
				_, err = recv()
			}
			if err != nil {
				return err
			}
		}
		if err := ack(ep, peer, client); err != nil {
			return err
		}
		add("link_stream_ns", float64(time.Since(t0).Nanoseconds())/n)
		d, err = mpi.RawStream(peer, big, 1, client)
		if err != nil {
			return err
		}
		add("mpi_bw_gbs", float64(big)/float64(d.Nanoseconds()))
		t0 = time.Now()
		if client {
			err = ep.Send(peer, bigMsg, time.Minute)
		} else {
			var m []byte
			m, err = recv()
			link.Free(ep, m) // (C memory: a message of more than 64 KiB)
		}
		if err != nil {
			return err
		}
		if err := ack(ep, peer, client); err != nil {
			return err
		}
		add("link_bw_gbs", float64(big)/float64(time.Since(t0).Nanoseconds()))
	}
	if client {
		for _, k := range []string{"mpi_rtt_ns", "link_rtt_ns", "link_rtt_idle_ns", "mpi_oneway_ns", "mpi_stream_ns", "link_stream_ns", "mpi_bw_gbs", "link_bw_gbs"} {
			fmt.Printf("%s %.2f\n", k, med(res[k]))
		}
	}
	return nil
}

// ack: the receiver (the proxy) answers one byte once it has everything.
func ack(ep link.Endpoint, peer int, client bool) error {
	if client {
		_, _, err := ep.Recv(time.Minute)
		return err
	}
	return ep.Send(peer, []byte{1}, time.Minute)
}
