// dragnet-loadgen: the load beside a build, in a compiled client (Go's net/http), so its per-request work is
// not Python's. dragnet.load.compiled drives it: the first stdin line is the load as JSON (rates, templates,
// ids, the Authorization header: never in argv), then `build <view path?query>` starts the view kinds and
// `stop` (or EOF) stops it. Every request sent, and every one due but not sent, is one line on stdout; the
// Python side keeps them as it keeps its own generator's (latencies, errors by reason, acknowledged revs).
//
// Lines: `ready <t>`, `R kind due sent end status stage error id rev` (tab-separated; stage: "" for the
// request, "read" for an update's read; error: CouchDB's `error`, a connection's reason, or empty),
// `N kind due`, `note text`, `end <t>`. Times are CLOCK_MONOTONIC seconds, Python's time.monotonic().
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

type config struct {
	URL         string            `json:"url"`
	Auth        string            `json:"auth"`
	DBPath      string            `json:"db_path"`
	Rates       [][2]any          `json:"rates"`
	MaxSeconds  float64           `json:"max_seconds"`
	MaxInFlight int               `json:"max_in_flight"`
	TimeoutS    float64           `json:"timeout_s"`
	GraceS      float64           `json:"grace_s"`
	Tag         string            `json:"tag"`
	N0          int               `json:"n0"`
	Seed        int64             `json:"seed"`
	Templates   []json.RawMessage `json:"templates"`
	ReadPaths   []string          `json:"read_paths"`
	Own         []string          `json:"own"`
}

var viewKinds = map[string]bool{"view-reads": true, "view-waits": true}

type gen struct {
	cfg      config
	client   *http.Client
	mono0    float64
	t0       time.Time
	mu       sync.Mutex // state below and the output
	out      *bufio.Writer
	inFlight map[string]int
	busy     map[string]bool
	own      []string
	n        int
	rng      *rand.Rand
	stopping bool
	reqCtx   context.Context // cancelled after the grace at stop
	cancel   context.CancelFunc
	drivers  sync.WaitGroup
	requests sync.WaitGroup
	quit     chan struct{}
	view     string
}

// monoNow reads CLOCK_MONOTONIC once (no x/sys in the standard library); later times are offsets from it.
func monoNow() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func (g *gen) mono(t time.Time) float64 { return g.mono0 + t.Sub(g.t0).Seconds() }

func (g *gen) at(m float64) time.Time {
	return g.t0.Add(time.Duration((m - g.mono0) * 1e9))
}

func (g *gen) line(s string) {
	g.mu.Lock()
	g.out.WriteString(s)
	g.out.WriteByte('\n')
	g.mu.Unlock()
}

func f(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }

func main() {
	// one P: no idle threads spinning for work between requests, the cheapest for a few hundred per second;
	// a heap this small can be collected rarely
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(400)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	first, err := in.ReadBytes('\n')
	if err != nil && len(first) == 0 {
		fmt.Fprintln(os.Stderr, "dragnet-loadgen: no load on stdin")
		os.Exit(2)
	}
	g := &gen{inFlight: map[string]int{}, busy: map[string]bool{}, quit: make(chan struct{})}
	if err := json.Unmarshal(first, &g.cfg); err != nil {
		fmt.Fprintln(os.Stderr, "dragnet-loadgen: bad load:", err)
		os.Exit(2)
	}
	g.own = append(g.own, g.cfg.Own...)
	g.n = g.cfg.N0
	g.rng = rand.New(rand.NewSource(g.cfg.Seed))
	g.out = bufio.NewWriterSize(os.Stdout, 1<<16)
	g.reqCtx, g.cancel = context.WithCancel(context.Background())
	g.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns: 0, MaxIdleConnsPerHost: 4096, DisableCompression: true, IdleConnTimeout: 90 * time.Second,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}}
	g.t0, g.mono0 = time.Now(), monoNow()
	until := g.at(g.mono0 + g.cfg.MaxSeconds)
	g.startKinds(false, g.t0, until)
	g.line("ready " + f(g.mono(g.t0)))
	go g.flusher()

	cmds := make(chan string)
	go func() {
		for {
			l, err := in.ReadString('\n')
			if l = strings.TrimRight(l, "\n"); l != "" {
				cmds <- l
			}
			if err != nil {
				close(cmds)
				return
			}
		}
	}()
	timer := time.NewTimer(time.Until(until))
loop:
	for {
		select {
		case c, ok := <-cmds:
			if !ok || c == "stop" {
				break loop
			}
			if strings.HasPrefix(c, "build ") {
				g.view = strings.TrimPrefix(c, "build ")
				g.startKinds(true, time.Now(), until)
			}
		case <-timer.C:
			g.line(fmt.Sprintf("note the load stopped by itself after %g s", g.cfg.MaxSeconds))
			break loop
		}
	}
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	close(g.quit)
	g.drivers.Wait()
	if !waitFor(&g.requests, g.cfg.GraceS) {
		g.cancel() // what is still waiting is counted as cancelled at stop
		waitFor(&g.requests, g.cfg.GraceS)
	}
	g.line("end " + f(g.mono(time.Now())))
	g.mu.Lock()
	g.out.Flush()
	g.mu.Unlock()
}

func waitFor(wg *sync.WaitGroup, s float64) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(time.Duration(s * 1e9)):
		return false
	}
}

func (g *gen) flusher() {
	t := time.NewTicker(200 * time.Millisecond)
	for range t.C {
		g.mu.Lock()
		g.out.Flush()
		g.mu.Unlock()
	}
}

func (g *gen) startKinds(views bool, start, until time.Time) {
	for _, kr := range g.cfg.Rates {
		kind, _ := kr[0].(string)
		rate, _ := kr[1].(float64)
		if rate <= 0 || viewKinds[kind] != views || (views && g.view == "") {
			continue
		}
		g.drivers.Add(1)
		go g.drive(kind, rate, start, until)
	}
}

// drive is the open loop of one kind: request i is due at start + i/rate, sent when due whatever the earlier
// ones did, unless max_in_flight of its kind wait already (then it is not sent, and said so).
func (g *gen) drive(kind string, rate float64, start, until time.Time) {
	defer g.drivers.Done()
	timer := time.NewTimer(0)
	<-timer.C
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) / rate * 1e9))
		if !due.Before(until) {
			return
		}
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-g.quit:
				return
			}
		}
		g.mu.Lock()
		if g.stopping {
			g.mu.Unlock()
			return
		}
		full := g.inFlight[kind] >= g.cfg.MaxInFlight
		if !full {
			g.inFlight[kind]++
		}
		g.mu.Unlock()
		if full {
			g.line("N\t" + kind + "\t" + f(g.mono(due)))
			continue
		}
		g.requests.Add(1)
		go g.one(kind, due)
	}
}

type result struct {
	status int
	stage  string
	err    string
	id     string
	rev    string
	ok     bool // the request did what it asked (2xx and its answer read)
}

func (g *gen) one(kind string, due time.Time) {
	defer g.requests.Done()
	sent := time.Now()
	var r result
	timeout := g.cfg.TimeoutS
	if kind == "view-waits" {
		timeout = g.cfg.MaxSeconds
	}
	ctx, cancel := context.WithTimeout(g.reqCtx, time.Duration(timeout*1e9))
	switch kind {
	case "writes":
		r = g.write(ctx)
	case "updates":
		r = g.update(ctx)
	case "reads":
		r = g.get(ctx, g.readPath())
	default:
		flag := "true"
		if kind == "view-reads" {
			flag = "false"
		}
		r = g.get(ctx, g.view+"&update="+flag)
	}
	cancel()
	end := time.Now()
	g.mu.Lock()
	g.inFlight[kind]--
	if kind == "updates" && r.id != "" {
		delete(g.busy, r.id)
	}
	if kind == "writes" && r.ok {
		g.own = append(g.own, r.id)
	}
	g.mu.Unlock()
	g.line(strings.Join([]string{"R", kind, f(g.mono(due)), f(g.mono(sent)), f(g.mono(end)),
		strconv.Itoa(r.status), r.stage, clean(r.err), r.id, r.rev}, "\t"))
}

func clean(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }

func (g *gen) readPath() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.cfg.ReadPaths) > 0 {
		return g.cfg.ReadPaths[g.rng.Intn(len(g.cfg.ReadPaths))]
	}
	if len(g.own) > 0 {
		return g.cfg.DBPath + "/" + g.own[g.rng.Intn(len(g.own))]
	}
	return g.cfg.DBPath + "/dragnet-load-none"
}

func (g *gen) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.cfg.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "dragnet-load")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.cfg.Auth != "" {
		req.Header.Set("Authorization", g.cfg.Auth)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, data, nil
}

// answer: the request's status and, for a refusal, CouchDB's `error`; a failed connection by its reason.
func (g *gen) answer(ctx context.Context, method, path string, body []byte) (result, []byte) {
	status, data, err := g.do(ctx, method, path, body)
	if err != nil {
		return result{err: g.reason(ctx, err)}, nil
	}
	if status >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(data, &e)
		return result{status: status, err: e.Error}, nil
	}
	return result{status: status, ok: true}, data
}

func (g *gen) reason(ctx context.Context, err error) string {
	switch {
	case g.reqCtx.Err() != nil:
		return "cancelled at stop"
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "dropped"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "reset"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return fmt.Sprintf("%T", errors.Unwrap(err))
}

func (g *gen) newID() string {
	g.n++
	return fmt.Sprintf("dragnet-load-%s-%07d", g.cfg.Tag, g.n)
}

func (g *gen) write(ctx context.Context) result {
	g.mu.Lock()
	id := g.newID()
	tpl := []byte(`{}`)
	if len(g.cfg.Templates) > 0 {
		tpl = g.cfg.Templates[g.rng.Intn(len(g.cfg.Templates))]
	}
	g.mu.Unlock()
	idJSON, _ := json.Marshal(id)
	body := append([]byte(`{"_id":`), idJSON...)
	if rest := bytes.TrimSpace(tpl[1:]); len(rest) > 0 && rest[0] != '}' {
		body = append(body, ',')
	}
	body = append(body, tpl[1:]...)
	return g.put(ctx, id, body, "")
}

func (g *gen) put(ctx context.Context, id string, body []byte, stage string) result {
	r, data := g.answer(ctx, "PUT", g.cfg.DBPath+"/"+id, body)
	r.id, r.stage = id, stage
	if data != nil {
		var a struct {
			Rev string `json:"rev"`
		}
		json.Unmarshal(data, &a)
		r.rev = a.Rev
	}
	return r
}

// update: one of the load's own documents no other update is writing, read, changed, written back.
func (g *gen) update(ctx context.Context) result {
	g.mu.Lock()
	id := ""
	for t := 0; t < 20 && len(g.own) > 0; t++ {
		if c := g.own[g.rng.Intn(len(g.own))]; !g.busy[c] {
			id = c
			break
		}
	}
	if id != "" {
		g.busy[id] = true
	}
	g.mu.Unlock()
	if id == "" {
		return result{err: "nothing to update"}
	}
	r, data := g.answer(ctx, "GET", g.cfg.DBPath+"/"+id, nil)
	if data == nil {
		r.id, r.stage = id, "read"
		return r
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers written back as they were read
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return result{id: id, stage: "read", status: r.status, err: "bad JSON"}
	}
	n, _ := strconv.Atoi(fmt.Sprint(doc["dragnet_load_updates"]))
	doc["dragnet_load_updates"] = n + 1
	body, _ := json.Marshal(doc)
	return g.put(ctx, id, body, "")
}

func (g *gen) get(ctx context.Context, path string) result {
	r, _ := g.answer(ctx, "GET", path, nil)
	return r
}
