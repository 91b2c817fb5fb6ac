// nats.go interop check: drives natslab's broker and nats-server through
// nats.go's own APIs (core, the jetstream package, KV, object store, micro)
// and diffs the two transcripts step by step, in the spirit of
// ../nats-js/. One step is one line "step<TAB>json"; values that must differ
// (times, nuids, server ids and versions, durations) are masked, their
// presence kept.
//
//	go run .                      fresh nats-server and natslab (each with an empty
//	                              store dir on a free 127.0.0.1 port), both checked at
//	                              once; writes out/{nats-server,natslab}.txt and
//	                              out/diff.txt; exit 1 if a step differs
//	go run . check nats://127.0.0.1:4222   the transcript of one running server
//
// NATS_SERVER and NATSLAB_SERVER override the server commands (the runner
// appends -a 127.0.0.1 -p PORT -js -sd DIR); defaults "nats-server" and
// "python3 -m natslab.server".
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

type server struct {
	label, cmd string
	port       int
	store      string
	proc       *exec.Cmd
	log        strings.Builder
	lines      []string
	err        error
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *server) start() error {
	dir, err := os.MkdirTemp("", "natsgo-"+s.label+"-")
	if err != nil {
		return err
	}
	s.store = dir
	s.port = freePort()
	argv := append(strings.Fields(s.cmd), "-a", "127.0.0.1", "-p", fmt.Sprint(s.port), "-js", "-sd", dir)
	s.proc = exec.Command(argv[0], argv[1:]...)
	s.proc.Stdout = &s.log
	s.proc.Stderr = &s.log
	if err := s.proc.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		// ready when it greets: this connection is the server's first client
		// (id 5 on both), so the check's first connection is id 6
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 500*time.Millisecond)
		if err == nil {
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "INFO ") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not start on port %d: %s", s.label, s.port, s.log.String())
}

func (s *server) stop() {
	if s.proc != nil && s.proc.Process != nil {
		s.proc.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.proc.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.proc.Process.Kill()
			<-done
		}
	}
	if s.store != "" {
		os.RemoveAll(s.store)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "check" {
		for _, l := range runCheck(os.Args[2]) {
			fmt.Println(l)
		}
		return
	}
	outdir := "out"
	if len(os.Args) >= 2 {
		outdir = os.Args[1]
	}
	os.MkdirAll(outdir, 0o755)
	servers := []*server{
		{label: "nats-server", cmd: env("NATS_SERVER", "nats-server")},
		{label: "natslab", cmd: env("NATSLAB_SERVER", "python3 -m natslab.server")},
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func(s *server) {
			defer wg.Done()
			defer s.stop()
			if s.err = s.start(); s.err != nil {
				return
			}
			t0 := time.Now()
			s.lines = runCheck(fmt.Sprintf("nats://127.0.0.1:%d", s.port))
			fmt.Fprintf(os.Stderr, "%s: %d steps in %.1fs\n", s.label, len(s.lines), time.Since(t0).Seconds())
		}(s)
	}
	wg.Wait()
	for _, s := range servers {
		if s.err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.label, s.err)
			os.Exit(2)
		}
		os.WriteFile(filepath.Join(outdir, s.label+".txt"), []byte(strings.Join(s.lines, "\n")+"\n"), 0o644)
		os.WriteFile(filepath.Join(outdir, s.label+".log"), []byte(s.log.String()), 0o644)
	}
	ref, ours := steps(servers[0].lines), steps(servers[1].lines)
	var names []string
	seen := map[string]bool{}
	for _, l := range append(append([]string{}, servers[0].lines...), servers[1].lines...) {
		n := strings.SplitN(l, "\t", 2)[0]
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var report []string
	diffs := 0
	for _, n := range names {
		a, okA := ref[n]
		b, okB := ours[n]
		if okA && okB && a == b {
			continue
		}
		diffs++
		if !okA {
			a = "<missing>"
		}
		if !okB {
			b = "<missing>"
		}
		report = append(report, fmt.Sprintf("## %s\n  nats-server: %s\n  natslab:     %s", n, a, b))
	}
	report = append(report, fmt.Sprintf("\n%d of %d steps differ", diffs, len(names)))
	text := strings.Join(report, "\n") + "\n"
	os.WriteFile(filepath.Join(outdir, "diff.txt"), []byte(text), 0o644)
	fmt.Print(text)
	if diffs > 0 {
		os.Exit(1)
	}
}

func steps(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		p := strings.SplitN(l, "\t", 2)
		if len(p) == 2 {
			m[p[0]] = p[1]
		}
	}
	return m
}
