package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/serve"
	"github.com/spf13/cobra"
)

// TestServeFlags: no seed flag; flag validation before anything starts.
func TestServeFlags(t *testing.T) {
	cmd := newServeCmd()
	for _, name := range []string{"seed", "protect-seed"} {
		if cmd.Flags().Lookup(name) != nil {
			t.Fatalf("dplp serve has a --%s flag: seeded noise must be impossible in the service", name)
		}
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "t")
	os.WriteFile(tok, []byte(strings.Repeat("a", 16)+"\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte(strings.Repeat("k", 40)+"\n"), 0o644)
	os.Chmod(open, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--graph", "g"}, "--admin-token-file"},
		{[]string{"--admin-token-file", tok, "--graph", "g", "--model", "m"}, "at least 32 bytes"},
		{[]string{"--admin-token-file", open, "--graph", "g", "--model", "m"}, "group or others"},
		{[]string{"--admin-token-file", tok, "--rate-limit", "-1"}, "--rate-limit"},
		{[]string{"--admin-token-file", tok, "--auth-fail-limit", "nan"}, "--auth-fail-limit"},
		{[]string{"--admin-token-file", tok, "--rate-burst", "-2"}, "burst"},
		{[]string{"--admin-token-file", tok, "--trusted-proxy", "not-a-cidr"}, "--trusted-proxy"},
		{[]string{"--admin-token-file", tok, "--admin-token-grace", "-1s"}, "--admin-token-grace"},
		{[]string{"--admin-token-file", tok, "--user-budget", "-1"}, "--user-budget"},
		{[]string{"--admin-token-file", tok, "--user-budget", "nan"}, "--user-budget"},
		{[]string{"--admin-token-file", tok, "--k-max", "0"}, "--k-max"},
		{[]string{"--admin-token-file", filepath.Join(dir, "none"), "--graph", "g", "--model", "m"}, "admin token file"},
	} {
		var out, errb bytes.Buffer
		code := execute(append([]string{"serve"}, c.args...), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("serve %v: exit %d, stderr %q (want a message about %s)", c.args, code, errb.String(), c.want)
		}
	}
}

func TestServeTrustedProxyFlag(t *testing.T) {
	for _, c := range []struct {
		arg, want string
	}{{"10.0.0.0/8", "10.0.0.0/8"}, {"10.1.2.3/8", "10.0.0.0/8"}, {"192.0.2.1", "192.0.2.1/32"}, {"::1", "::1/128"}} {
		o := &serveOptions{tokenFile: "x", logLevel: "info", grace: time.Second, trustedProxies: []string{c.arg}}
		o.cfg.KMax = 10
		if err := o.validate(); err != nil || len(o.cfg.TrustedProxies) != 1 || o.cfg.TrustedProxies[0].String() != c.want {
			t.Errorf("%s: %v %v (want %s)", c.arg, o.cfg.TrustedProxies, err, c.want)
		}
	}
}

func TestPlainTextWarning(t *testing.T) {
	for _, c := range []struct {
		addr string
		tls  bool
		warn bool
	}{
		{"127.0.0.1:8080", false, false},
		{"[::1]:8080", false, false},
		{"0.0.0.0:8080", false, true},
		{"192.0.2.10:8080", false, true},
		{"[::]:8080", false, true},
		{"0.0.0.0:8443", true, false},
	} {
		a, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := plainTextWarning(a, c.tls) != ""; got != c.warn {
			t.Errorf("%s tls=%v: warning %v, want %v", c.addr, c.tls, got, c.warn)
		}
	}
}

// TestBenchServeRun runs `dplp bench serve` with the arguments in
// DPLP_BENCH_SERVE_ARGS (space-separated) and prints its report; skipped
// when unset. Example:
//
//	DPLP_BENCH_SERVE_ARGS="--graph ../shared/datasets/facebook.txt --k 30" go test -run TestBenchServeRun -v ./cmd/dplp/internal/cli/
func TestBenchServeRun(t *testing.T) {
	args := os.Getenv("DPLP_BENCH_SERVE_ARGS")
	if args == "" {
		t.Skip("set DPLP_BENCH_SERVE_ARGS to run the service benchmark")
	}
	var out, errb bytes.Buffer
	cmd := newBenchServeCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(strings.Fields(args))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())
}

// ---- end-to-end: the dplp binary, `dplp serve` on a loopback port ----

// e2eFiles are the inputs of the served process.
type e2eFiles struct {
	bin, graph, prot, model, adminFile, admin string
	users                                     []string
}

// e2eSetup builds the binary, generates a latent graph of 300 nodes whose
// labels carry a per-run prefix (stores shared between runs, such as a CI
// PostgreSQL database, then never see the same user twice), marks every
// third edge protected and trains a tiny model.
func e2eSetup(t *testing.T) e2eFiles {
	t.Helper()
	dir := t.TempDir()
	f := e2eFiles{bin: filepath.Join(dir, "dplp"), graph: filepath.Join(dir, "g.txt"), prot: filepath.Join(dir, "p.txt"),
		model: filepath.Join(dir, "m.json"), adminFile: filepath.Join(dir, "admin.token")}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go" // CI's toolchain (see .ci/run)
	}
	build := exec.Command(goBin, "build", "-o", f.bin, "./cmd/dplp")
	build.Dir = "../../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	raw := filepath.Join(dir, "raw.txt")
	e2eRun(t, f.bin, "gen", "latent", "--n", "300", "--seed", "7", "--out", raw)
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("r%x_", time.Now().UnixNano())
	var gb, pb strings.Builder
	seen := map[string]bool{}
	e := 0
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 2 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		a, c := prefix+fs[0], prefix+fs[1]
		fmt.Fprintf(&gb, "%s %s\n", a, c)
		if e%3 == 0 {
			fmt.Fprintf(&pb, "%s %s\n", a, c)
		}
		e++
		for _, x := range []string{a, c} {
			if !seen[x] {
				seen[x] = true
				f.users = append(f.users, x)
			}
		}
	}
	os.WriteFile(f.graph, []byte(gb.String()), 0o600)
	os.WriteFile(f.prot, []byte(pb.String()), 0o600)
	e2eRun(t, f.bin, "train", "--graph", f.graph, "--protected", f.prot, "--score", "aa", "--variant", "dplp", "--eps", "0.5", "--epochs", "2", "--out", f.model)
	f.admin = fmt.Sprintf("e2e-admin-%016x-%016x", rand.Uint64(), rand.Uint64())
	os.WriteFile(f.adminFile, []byte(f.admin+"\n"), 0o600)
	return f
}

func e2eRun(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("dplp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type e2eServer struct {
	cmd  *exec.Cmd
	base string
	log  *lockedBuffer
	done chan error
}

// startServe starts `dplp serve` on 127.0.0.1:0 and waits for its
// "listening" log line.
func startServe(t *testing.T, f e2eFiles, store string, extra ...string) *e2eServer {
	t.Helper()
	args := append([]string{"serve", "--graph", f.graph, "--protected", f.prot, "--model", f.model, "--store", store,
		"--listen", "127.0.0.1:0", "--admin-token-file", f.adminFile, "--k-max", "50", "--create", "--rate-limit", "0", "--auth-fail-limit", "0"}, extra...)
	cmd := exec.Command(f.bin, args...)
	pr, pw := io.Pipe()
	s := &e2eServer{cmd: cmd, log: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.log.Write(append(sc.Bytes(), '\n'))
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				addr <- l.Addr
			}
		}
	}()
	// done reports the exit only once every log line has been read, so
	// stop sees the last lines the process wrote.
	go func() { err := cmd.Wait(); pw.Close(); <-scanned; s.done <- err }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case a := <-addr:
		s.base = "http://" + a
	case err := <-s.done:
		t.Fatalf("serve exited: %v\n%s", err, s.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start\n%s", s.log.String())
	}
	return s
}

// stop sends SIGTERM and expects a clean exit.
func (s *e2eServer) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, s.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(s.log.String(), "shut down cleanly") {
		t.Fatalf("no clean shutdown in the log:\n%s", s.log.String())
	}
}

// kill sends SIGKILL (kill -9).
func (s *e2eServer) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

var e2eClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

type e2eReply struct {
	Status int
	Body   []byte
	Type   string // problem type
}

func call(method, url, token, body string, hdr ...string) (e2eReply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return e2eReply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e2eClient.Do(req)
	if err != nil {
		return e2eReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return e2eReply{}, err
	}
	r := e2eReply{Status: resp.StatusCode, Body: b}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p struct{ Type string }
		json.Unmarshal(b, &p)
		r.Type = p.Type
	}
	return r, nil
}

func mustCall(t *testing.T, want int, method, url, token, body string, hdr ...string) e2eReply {
	t.Helper()
	r, err := call(method, url, token, body, hdr...)
	// A rate-limited server (--rate-limit) may answer 429 right after a
	// burst: retry as a client would, for up to 10 s.
	for tries := 0; err == nil && r.Status == http.StatusTooManyRequests && want != http.StatusTooManyRequests && tries < 100; tries++ {
		time.Sleep(100 * time.Millisecond)
		r, err = call(method, url, token, body, hdr...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != want {
		t.Fatalf("%s %s: %d (want %d): %s", method, url, r.Status, want, r.Body)
	}
	return r
}

func issue(t *testing.T, s *e2eServer, admin, user string) string {
	t.Helper()
	var out struct{ Token string }
	json.Unmarshal(mustCall(t, 201, "POST", s.base+"/v1/admin/users", admin, `{"user":"`+user+`"}`).Body, &out)
	return out.Token
}

type e2eList struct {
	Recommendations []string
	ReleaseID       int64 `json:"release_id"`
	Fresh           bool
}

// TestServeE2E runs the binary on SQLite and, when DPLP_TEST_POSTGRES_DSN
// is set, on PostgreSQL.
func TestServeE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test (builds and runs the binary)")
	}
	f := e2eSetup(t)
	t.Run("sqlite", func(t *testing.T) {
		dsn := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
		e2eScenario(t, f, dsn, f.users[:150])
		e2eHardening(t, f, dsn, f.users[0])
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("DPLP_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("DPLP_TEST_POSTGRES_DSN is not set: skipping the PostgreSQL end-to-end test (source .ci/postgres.sh to get one)")
		}
		e2eScenario(t, f, dsn, f.users[150:])
		e2eTwoProcesses(t, f, dsn, f.users[len(f.users)-1])
	})
}

// e2eScenario: auth isolation, 40 concurrent fresh requests against a cap
// of 3 lists, Idempotency-Key, kill -9 during a stream of fresh requests.
func e2eScenario(t *testing.T, f e2eFiles, dsn string, users []string) {
	const k = 5 // a list costs 5 x 0.5 = 2.5; the cap 7.5 allows 3
	s := startServe(t, f, dsn, "--user-budget", "7.5")
	alice, bob := users[0], users[1]
	ta, tb := issue(t, s, f.admin, alice), issue(t, s, f.admin, bob)

	// Auth isolation.
	u := func(user, rest string) string { return s.base + "/v1/users/" + user + rest }
	mustCall(t, 200, "GET", u(alice, "/budget"), ta, "")
	for _, c := range []struct {
		method, url, token string
		status             int
	}{
		{"GET", u(bob, "/budget"), ta, 403},
		{"GET", u(bob, fmt.Sprintf("/recommendations?k=%d", k)), ta, 403},
		{"POST", u(alice, fmt.Sprintf("/recommendations?k=%d", k)), tb, 403},
		{"PUT", u(bob, "/protected"), ta, 403},
		{"GET", u(alice, "/budget"), "", 401},
		{"GET", u(alice, "/budget"), "not-a-token", 401},
		{"GET", u(alice, "/budget"), f.admin, 403},
		{"POST", s.base + "/v1/admin/users", ta, 403},
	} {
		body := ""
		if c.method == "PUT" {
			body = `{"protected":[]}`
		}
		if r := mustCall(t, c.status, c.method, c.url, c.token, body); r.Type == "" {
			t.Fatalf("%s %s: no problem document: %s", c.method, c.url, r.Body)
		}
	}

	// 40 concurrent fresh requests for one user: exactly 3 lists.
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := call("POST", u(alice, fmt.Sprintf("/recommendations?k=%d", k)), ta, "")
			key := fmt.Sprint(r.Status, " ", r.Type)
			if err != nil {
				key = err.Error()
			}
			mu.Lock()
			counts[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts["200 "] != 3 || counts["403 budget-exhausted"] != 37 || len(counts) != 2 {
		t.Fatalf("40 concurrent fresh requests: %v (want 3 lists and 37 budget-exhausted)", counts)
	}
	var bud struct {
		Releases int
		Spent    float64
	}
	json.Unmarshal(mustCall(t, 200, "GET", u(alice, "/budget"), ta, "").Body, &bud)
	if bud.Releases != 3 || bud.Spent != 7.5 {
		t.Fatalf("budget after the burst: %+v", bud)
	}

	// Idempotency-Key: a retry returns the same list, charged once.
	var l1, l2 e2eList
	json.Unmarshal(mustCall(t, 200, "POST", u(bob, fmt.Sprintf("/recommendations?k=%d", k)), tb, "", "Idempotency-Key", "retry-me").Body, &l1)
	json.Unmarshal(mustCall(t, 200, "POST", u(bob, fmt.Sprintf("/recommendations?k=%d", k)), tb, "", "Idempotency-Key", "retry-me").Body, &l2)
	if !l1.Fresh || l2.Fresh || l1.ReleaseID != l2.ReleaseID || !slices.Equal(l1.Recommendations, l2.Recommendations) {
		t.Fatalf("idempotent retry: %+v then %+v", l1, l2)
	}
	json.Unmarshal(mustCall(t, 200, "GET", u(bob, "/budget"), tb, "").Body, &bud)
	if bud.Releases != 1 {
		t.Fatalf("idempotent retry charged twice: %+v", bud)
	}
	s.stop(t)

	// kill -9 during a stream of fresh requests; every list a client
	// received must be in the ledger after a restart.
	s = startServe(t, f, dsn, "--user-budget", "1000")
	stream := users[2:22]
	tokens := make([]string, len(stream))
	for i, user := range stream {
		tokens[i] = issue(t, s, f.admin, user)
	}
	type got struct {
		user, token, key string
		list             e2eList
	}
	var received []got
	var sent atomic.Int64
	stop := make(chan struct{})
	var sw sync.WaitGroup
	for w := range 8 {
		sw.Add(1)
		go func() {
			defer sw.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				j := (w + 8*i) % len(stream)
				key := fmt.Sprintf("w%d-%d", w, i)
				sent.Add(1)
				r, err := call("POST", s.base+"/v1/users/"+stream[j]+fmt.Sprintf("/recommendations?k=%d", k), tokens[j], "", "Idempotency-Key", key)
				if err != nil || r.Status != 200 {
					continue // the kill: no answer
				}
				var l e2eList
				json.Unmarshal(r.Body, &l)
				mu.Lock()
				received = append(received, got{stream[j], tokens[j], key, l})
				mu.Unlock()
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n >= 60 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.kill()
	close(stop)
	sw.Wait()
	if len(received) == 0 {
		t.Fatal("no list received before the kill")
	}
	perUser := map[string]int{}
	for _, g := range received {
		perUser[g.user]++
	}
	s = startServe(t, f, dsn, "--user-budget", "1000")
	st, err := ledger.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for user, n := range perUser {
		sp, err := st.Budget(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Releases < n || sp.Spent < float64(n)*2.5 {
			t.Fatalf("user %s received %d lists but the ledger holds %+v", user, n, sp)
		}
	}
	// Each received list is recorded under its key, with its content.
	for _, g := range received {
		var again e2eList
		r := mustCall(t, 200, "POST", s.base+"/v1/users/"+g.user+fmt.Sprintf("/recommendations?k=%d", k), g.token, "", "Idempotency-Key", g.key)
		json.Unmarshal(r.Body, &again)
		if again.Fresh || again.ReleaseID != g.list.ReleaseID || !slices.Equal(again.Recommendations, g.list.Recommendations) {
			t.Fatalf("list received before the kill is not in the ledger: %+v vs %+v", g.list, again)
		}
	}
	t.Logf("kill -9 during a stream of fresh requests (%d sent, counting refused connections after the kill): the %d lists received are all in the ledger after a restart", sent.Load(), len(received))
	s.stop(t)
}

// e2eTwoProcesses: two serve processes on one store never over-spend.
func e2eTwoProcesses(t *testing.T, f e2eFiles, dsn, user string) {
	a := startServe(t, f, dsn, "--user-budget", "7.5")
	b := startServe(t, f, dsn, "--user-budget", "7.5")
	tok := issue(t, a, f.admin, user)
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			r, err := call("POST", s.base+"/v1/users/"+user+"/recommendations?k=5", tok, "")
			key := fmt.Sprint(r.Status, " ", r.Type)
			if err != nil {
				key = err.Error()
			}
			mu.Lock()
			counts[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts["200 "] != 3 || counts["403 budget-exhausted"] != 37 {
		t.Fatalf("two processes, 40 concurrent fresh requests: %v (want 3 lists)", counts)
	}
	st, err := ledger.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, _ := st.Budget(context.Background(), user)
	if sp.Releases != 3 || sp.Spent != 7.5 {
		t.Fatalf("ledger after two processes: %+v", sp)
	}
	a.stop(t)
	b.stop(t)
}

// e2eHardening: --rate-limit 50 turns a single token's burst of 500 into
// 429s (with Retry-After); HEAD never charges; SIGHUP rotates the admin
// token; the ledger file is 0600; the start-up log names the store, the
// cap, the privacy unit and the build.
func e2eHardening(t *testing.T, f e2eFiles, dsn, user string) {
	tokFile := filepath.Join(t.TempDir(), "admin.token")
	os.WriteFile(tokFile, []byte(f.admin+"\n"), 0o600)
	ff := f
	ff.adminFile = tokFile
	s := startServe(t, ff, dsn, "--rate-limit", "50", "--user-budget", "1000")
	defer s.stop(t)
	tok := issue(t, s, f.admin, user)
	releases := func() int {
		st, err := ledger.OpenWith(context.Background(), dsn, ledger.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sp, err := st.Budget(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		return sp.Releases
	}
	n0 := releases()
	for _, k := range []int{3, 4} {
		r, err := call("HEAD", fmt.Sprintf("%s/v1/users/%s/recommendations?k=%d", s.base, user, k), tok, "")
		if err != nil || r.Status != 405 {
			t.Fatalf("HEAD: %v %v", r.Status, err)
		}
	}
	if n := releases() - n0; n != 0 {
		t.Fatalf("HEAD released %d lists", n)
	}
	counts := map[int]int{}
	for range 500 {
		req, _ := http.NewRequest("GET", s.base+"/v1/users/"+user+"/budget", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e2eClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if counts[429] == 0 || counts[200] == 0 || counts[200]+counts[429] != 500 {
		t.Fatalf("a burst of 500 at --rate-limit 50: %v", counts)
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file: %v %v", fi.Mode().Perm(), err)
	}
	next := fmt.Sprintf("e2e-rotated-%016x-%016x", rand.Uint64(), rand.Uint64())
	os.WriteFile(tokFile, []byte(next+"\n"), 0o600)
	s.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := call("GET", s.base+"/v1/admin/state", next, "")
		if err == nil && r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated admin token was not accepted after SIGHUP\n%s", s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustCall(t, 200, "GET", s.base+"/v1/admin/state", f.admin, "") // the old one, in its grace period
	log := s.log.String()
	for _, want := range []string{`"msg":"starting"`, `"store":"` + ledger.Redact(dsn) + `"`, `"privacy_unit":"party"`, `"cap_eps":1000`, `"build":"dplp `, "admin token rotated"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if strings.Contains(log, f.admin) || strings.Contains(log, next) || strings.Contains(log, tok) {
		t.Fatal("a token in the log")
	}
}

// TestServeGroupCommitFlags: --group-commit-delay 0 means no wait (a
// negative Config delay), the default is serve's, negative values and a
// negative --group-commit-max are errors.
func TestServeGroupCommitFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr bool
	}{
		{nil, serve.DefaultGroupCommitDelay, false},
		{[]string{"--group-commit-delay", "0"}, -1, false},
		{[]string{"--group-commit-delay", "5ms"}, 5 * time.Millisecond, false},
		{[]string{"--group-commit-delay", "-1ms"}, 0, true},
		{[]string{"--group-commit-max", "-2"}, 0, true},
	} {
		o := &serveOptions{}
		cmd := &cobra.Command{}
		o.register(cmd)
		if err := cmd.ParseFlags(append([]string{"--admin-token-file", "x"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o.cfg.KMax = 10
		err := o.validate()
		if (err != nil) != tc.wantErr {
			t.Fatalf("%v: err %v, want error %v", tc.args, err, tc.wantErr)
		}
		if err == nil && o.cfg.GroupCommitDelay != tc.want {
			t.Errorf("%v: delay %v, want %v", tc.args, o.cfg.GroupCommitDelay, tc.want)
		}
	}
}
