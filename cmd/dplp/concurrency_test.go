package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/dplp/dplp/ledger"
)

// TestConcurrentProcessesRecordEveryCharge is the 20-process experiment of
// the deployment-core issue: 20 `dplp recommend --fresh` processes for the
// same user on one SQLite store, run at once. Every list printed must be
// charged: the ledger's total equals the sum of the costs the processes
// report, and its release count equals the lists printed. (The JSON ledger
// this replaced recorded 3.5 of 10.0.)
func TestConcurrentProcessesRecordEveryCharge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 20 processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "dplp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("dplp %v: %v\n%s", args, err, out)
		}
		return out
	}
	g := filepath.Join(dir, "g.txt")
	run("gen", "latent", "--n", "300", "--mean-degree", "10", "--out", g)
	prot := filepath.Join(dir, "prot.txt")
	var marks bytes.Buffer
	for i := 0; i+1 < 300; i += 2 { // every node has a protected pair: user 1's scores get noise
		fmt.Fprintf(&marks, "%d %d\n", i, i+1)
	}
	if err := os.WriteFile(prot, marks.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "m.json")
	run("train", "--graph", g, "--protected", prot, "--score", "cn", "--variant", "lin", "--eps", "0.5", "--epochs", "2", "--out", m)
	store := "sqlite:" + filepath.Join(dir, "ledger.db")
	const procs = 20
	var wg sync.WaitGroup
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, "recommend", "--model", m, "--graph", g, "--protected", prot, "--user", "1", "--k", "5", "--fresh", "--store", store, "--create", "--format", "jsonl")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			errs[i] = cmd.Run()
			outs[i] = append(stdout.Bytes(), stderr.Bytes()...)
		}()
	}
	wg.Wait()
	costRe := regexp.MustCompile(`"cost":([0-9.eE+-]+)`)
	printed, lists := 0.0, 0
	for i := range procs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
		for _, mm := range costRe.FindAllSubmatch(outs[i], -1) {
			c, err := strconv.ParseFloat(string(mm[1]), 64)
			if err != nil {
				t.Fatal(err)
			}
			printed += c
			lists++
		}
	}
	if lists != procs {
		t.Fatalf("%d lists printed by %d processes", lists, procs)
	}
	st, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, err := st.Budget(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Releases != lists || fmt.Sprintf("%.9g", sp.Spent) != fmt.Sprintf("%.9g", printed) {
		t.Fatalf("ledger records %d releases, %v eps; processes printed %d lists costing %v", sp.Releases, sp.Spent, lists, printed)
	}
	if printed == 0 {
		t.Fatal("nothing was charged (user 1 has no noise?)")
	}
}
