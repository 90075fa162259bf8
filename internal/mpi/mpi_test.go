package mpi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

func TestMain(m *testing.M) {
	if rc, ok := runRole(os.Args[1:]); ok {
		os.Exit(rc)
	}
	os.Exit(m.Run())
}

func envOf(kv ...string) Env {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRemoteModeAndUse(t *testing.T) {
	for _, c := range []struct {
		env      []string
		mode     Mode
		use, bad bool
	}{
		{nil, Auto, false, false},
		{[]string{"OMPI_COMM_WORLD_SIZE", "3"}, Auto, true, false},
		{[]string{"OMPI_COMM_WORLD_SIZE", "1"}, Auto, false, false},
		{[]string{"OFFLOAD_REMOTE", "off", "OMPI_COMM_WORLD_SIZE", "3"}, Off, false, false},
		{[]string{"OFFLOAD_REMOTE", "MPI"}, Force, true, false},
		{[]string{"OFFLOAD_REMOTE", ""}, Auto, false, false},
		{[]string{"OFFLOAD_REMOTE", "auto", "PMIX_RANK", "0", "SLURM_NTASKS", "4"}, Auto, true, false},
		{[]string{"PMIX_RANK", "0", "SLURM_NTASKS", "1"}, Auto, false, false},
		{[]string{"PMIX_RANK", "0"}, Auto, false, false},
		{[]string{"OFFLOAD_REMOTE", "tcp"}, Auto, false, true},
	} {
		env := envOf(c.env...)
		m, err := RemoteMode(env)
		u, uerr := Use(env)
		if (err != nil) != c.bad || (uerr != nil) != c.bad || m != c.mode || u != c.use {
			t.Errorf("%v: mode %v (%v), use %v (%v); want %v, %v, error %v", c.env, m, err, u, uerr, c.mode, c.use, c.bad)
		}
		if c.bad && !strings.Contains(err.Error(), "OFFLOAD_REMOTE") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	o, err := OptionsFromEnv(envOf())
	if err != nil || o.Library != "libmpi.so.40" || o.Discovery != 10*time.Second || o.Stall != 30*time.Second || o.ProxyRanks != nil || o.Spin != time.Millisecond {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = OptionsFromEnv(envOf(EnvDiscovery, "250ms", EnvStall, "2.5", EnvProxyRanks, "3,4 7", EnvLibrary, "/opt/ompi/lib/libmpi.so.40"))
	if err != nil || o.Discovery != 250*time.Millisecond || o.Stall != 2500*time.Millisecond ||
		!reflect.DeepEqual(o.ProxyRanks, []int{3, 4, 7}) || o.Library != "/opt/ompi/lib/libmpi.so.40" {
		t.Fatalf("set: %+v, %v", o, err)
	}
	for v, want := range map[string]time.Duration{"250us": 250 * time.Microsecond, "0": 0, "0.002": 2 * time.Millisecond, "1s": time.Second} {
		if o, err := OptionsFromEnv(envOf(EnvSpin, v)); err != nil || o.Spin != want {
			t.Errorf("%s=%s: %v, %v; want %v", EnvSpin, v, o.Spin, err, want)
		}
	}
	for _, kv := range [][2]string{{EnvDiscovery, "0"}, {EnvDiscovery, "-1s"}, {EnvStall, "soon"}, {EnvProxyRanks, "1,x"}, {EnvProxyRanks, "-2"},
		{EnvSpin, "-1ms"}, {EnvSpin, "2s"}, {EnvSpin, "fast"}} {
		if _, err := OptionsFromEnv(envOf(kv[0], kv[1])); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v, want one naming the variable", kv[0], kv[1], err)
		}
	}
}

// The variables below are what Open MPI 4.1.4's mpirun set for
// "-np 1 env : -np 2 env" (the client's context first).
func TestAppContexts(t *testing.T) {
	env := envOf("OMPI_APP_CTX_NUM_PROCS", "1 2", "OMPI_MCA_orte_app_num", "1", "OMPI_FIRST_RANKS", "0 0")
	ctxs, own, ok := appContexts(env, 2, 3)
	if !ok || own != 1 || !reflect.DeepEqual(ctxs, [][2]int{{0, 1}, {1, 3}}) {
		t.Fatalf("got %v %d %v", ctxs, own, ok)
	}
	for _, c := range []struct {
		env        Env
		rank, size int
	}{
		{envOf("OMPI_APP_CTX_NUM_PROCS", "1 2"), 0, 3},                               // no own context
		{envOf("OMPI_APP_CTX_NUM_PROCS", "1 2", "OMPI_MCA_orte_app_num", "1"), 0, 3}, // rank outside it
		{envOf("OMPI_APP_CTX_NUM_PROCS", "1 2", "OMPI_MCA_orte_app_num", "0"), 0, 4}, // wrong size
		{envOf("OMPI_APP_CTX_NUM_PROCS", "1 x", "OMPI_MCA_orte_app_num", "0"), 0, 3}, // garbage
		{envOf("OMPI_APP_CTX_NUM_PROCS", "1 2", "OMPI_MCA_orte_app_num", "5"), 0, 3}, // no such context
	} {
		if _, _, ok := appContexts(c.env, c.rank, c.size); ok {
			t.Errorf("rank %d of %d accepted", c.rank, c.size)
		}
	}
}

// TestClientCount: the clients whose Exits end a proxy. With Open MPI's
// application contexts (or OFFLOAD_REMOTE_PROXY_RANKS) the count does not
// depend on which proxies answered discovery in time: a proxy that missed
// its peer's late answer still waits for the one client of
// -np 1 app : -np 2 offload-proxy, not for two.
func TestClientCount(t *testing.T) {
	ctxs := [][2]int{{0, 1}, {1, 3}} // -np 1 app : -np 2 offload-proxy
	peer := func(ranks ...int) []link.Peer {
		var ps []link.Peer
		for _, r := range ranks {
			ps = append(ps, link.Peer{Rank: r, Role: link.Proxy})
		}
		return ps
	}
	three := [][2]int{{0, 2}, {2, 3}, {3, 4}} // -np 2 app : -np 1 proxy : -np 1 proxy
	for _, c := range []struct {
		name       string
		rank, size int
		proxyRanks []int
		ctxs       [][2]int
		own        int
		proxies    []link.Peer
		want       int
	}{
		{"contexts, peer found", 1, 3, nil, ctxs, 1, peer(2), 1},
		{"contexts, peer missed", 1, 3, nil, ctxs, 1, nil, 1},
		{"proxy contexts of one each, peer found", 2, 4, nil, three, 1, peer(3), 2},
		{"proxy ranks, peer missed", 1, 3, []int{1, 2}, nil, 0, nil, 1},
		{"proxy ranks without itself", 2, 4, []int{3}, nil, 0, nil, 2},
		{"no word, peer found", 1, 3, nil, nil, 0, peer(2), 1},
		{"no word, alone", 0, 1, nil, nil, 0, nil, 0},
	} {
		if got := clientCount(c.rank, c.size, c.proxyRanks, c.ctxs, c.own, c.ctxs != nil, c.proxies); got != c.want {
			t.Errorf("%s: %d clients, want %d", c.name, got, c.want)
		}
	}
}

func needMPI(t *testing.T) {
	t.Helper()
	if err := Available(""); err != nil {
		t.Skipf("Open MPI is not installed (Debian: openmpi-bin libopenmpi-dev): %v", err)
	}
}

// TestNotOpenMPI: a library that is not Open MPI is refused by name.
func TestNotOpenMPI(t *testing.T) {
	if err := loadLocked("libc.so.6"); state.loaded == "" {
		if err == nil || !strings.Contains(err.Error(), "not Open MPI") {
			t.Fatalf("libc as MPI: %v", err)
		}
	}
	if err := loadLocked("/nonexistent/libmpi.so.40"); state.loaded == "" && err == nil {
		t.Fatal("a missing library loaded")
	}
}

// leftovers lists processes running this test binary other than this one.
func leftovers(t *testing.T) []string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ds, _ := os.ReadDir("/proc")
	for _, d := range ds {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); err == nil && exe == self {
			out = append(out, d.Name())
		}
	}
	return out
}

func launcher(t *testing.T) string {
	t.Helper()
	needMPI(t)
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("no mpirun (Debian: openmpi-bin)")
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "remote", "mpirun.sh")
}

// TestMPMD runs this binary as a job of one client and two proxies under
// tests/remote/mpirun.sh (roles_test.go): discovery, ordered delivery of
// every size class, 64 MiB, concurrent senders, a receive timeout, a
// proxy that stops receiving, a proxy killed, close and reopen. The job
// must end by itself with every rank gone.
func TestMPMD(t *testing.T) {
	sh := launcher(t)
	self, _ := os.Executable()
	cmd := exec.Command("bash", sh, "-t", "240", "-np", "1", self, "-linkcheck=client", ":", "-np", "2", self, "-linkcheck=proxy")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	t.Logf("mpirun.sh: %v after %v\n%s", err, time.Since(t0).Round(time.Millisecond), out.String())
	if err != nil {
		t.Errorf("the job failed: %v", err)
	}
	for _, name := range []string{"launched", "go signals", "discovery", "ordered echo", "empty message", "64 MiB message", "placed message", "dropped message", "chunked message", "foreign messages", "concurrent senders", "small messages not taken at once",
		"receive timeout", "peer not receiving", "peer killed", "closed", "reopen without contexts", "reopen with proxy ranks"} {
		if !strings.Contains(out.String(), "PASS "+name+"\n") {
			t.Errorf("no PASS %s", name)
		}
	}
	// the client's MPI_Finalize at exit waits (at most 60 s) for the proxy
	// its exit hook told to end
	var hook int64
	if i := strings.Index(out.String(), "client: exit hook: <nil> at "); i < 0 {
		t.Error("the exit hook did not run, or its send failed")
	} else if _, err := fmt.Sscan(out.String()[i+len("client: exit hook: <nil> at "):], &hook); err != nil {
		t.Error(err)
	} else if el := time.Since(time.UnixMilli(hook)); el > 40*time.Second {
		t.Errorf("the job ended %v after the exit hook: MPI_Finalize at exit waited for its bound", el)
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("ranks left running: %v", l)
	}
}

// TestLauncherBound: past mpirun.sh's bound every rank is killed (each
// in a process group of its own) and the status is 124.
func TestLauncherBound(t *testing.T) {
	sh := launcher(t)
	self, _ := os.Executable()
	t0 := time.Now()
	cmd := exec.Command("bash", sh, "-t", "3", "-np", "1", self, "-linkcheck=idle", ":", "-np", "2", self, "-linkcheck=idle")
	out, err := runBounded(cmd, 60*time.Second)
	el := time.Since(t0)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 124 {
		t.Errorf("status %v, want 124\n%s", err, out)
	}
	if el > 30*time.Second {
		t.Errorf("took %v with a 3 s bound", el)
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("ranks left running: %v", l)
	}
}

// TestFinalizeBound: FinalizeWithin returns at its bound beside a rank
// that never finalizes, where MPI_Finalize itself would wait for it.
func TestFinalizeBound(t *testing.T) {
	sh := launcher(t)
	self, _ := os.Executable()
	cmd := exec.Command("bash", sh, "-t", "60", "-np", "1", self, "-linkcheck=finalize-bound", ":", "-np", "1", self, "-linkcheck=holdout")
	out, err := runBounded(cmd, 90*time.Second)
	t.Logf("mpirun.sh: %v\n%s", err, out)
	if !strings.Contains(out, "PASS finalize bound") {
		t.Error("no PASS finalize bound")
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("ranks left running: %v", l)
	}
}

// TestAppInit: an application that initialised MPI itself (a singleton
// run, no launcher): MPI_THREAD_SINGLE is refused by name,
// MPI_THREAD_MULTIPLE is reused.
func TestAppInit(t *testing.T) {
	needMPI(t)
	self, _ := os.Executable()
	for _, r := range []string{"appinit-single", "appinit-multiple"} {
		cmd := exec.Command(self, "-linkcheck="+r)
		cmd.Env = append(os.Environ(), "OMPI_MCA_btl=self,vader", "OMPI_MCA_pml=ob1", "OMPI_MCA_oob_tcp_if_include=lo", "OMPI_MCA_btl_tcp_if_include=lo")
		out, err := runBounded(cmd, 60*time.Second)
		t.Logf("%s: %s", r, out)
		if err != nil || !strings.Contains(out, "PASS") {
			t.Errorf("%s: %v", r, err)
		}
	}
}

func runBounded(cmd *exec.Cmd, d time.Duration) (string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return out.String(), os.ErrDeadlineExceeded
	}
}

var _ = link.Client

// BenchmarkSelf: the Endpoint's own cost per message, sent to this
// process (an MPI singleton) and received back.
func BenchmarkSelf(b *testing.B) {
	if err := Available(""); err != nil {
		b.Skip(err)
	}
	os.Setenv("OMPI_MCA_btl", "self,vader")
	os.Setenv("OMPI_MCA_pml", "ob1")
	ep, err := OpenWith(link.Client, Options{Library: DefaultLibrary, Discovery: time.Second, Stall: time.Second}, envOf())
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	msg := make([]byte, 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ep.Send(0, msg, time.Second); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ep.Recv(time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
