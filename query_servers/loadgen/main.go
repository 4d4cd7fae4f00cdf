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
	"net/url"
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
	TickS       float64           `json:"tick_s"`
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
	addKinds chan []*kind // the view kinds, at `build`
	hdr      http.Header  // shared by every request: the transport only reads it
	putHdr   http.Header
	reads    []*url.URL  // read_paths parsed once
	viewURL  [2]*url.URL // the view with update=false, update=true
	viewErr  error
}

// kind: one request kind's open-loop schedule (request i due at start + i/rate) and its workers. A worker
// lives until stop and takes one due time at a time from work: no goroutine (and stack growth) per request.
type kind struct {
	name  string
	rate  float64
	start time.Time
	i     int
	work  chan time.Time
}

func (k *kind) due() time.Time { return k.start.Add(time.Duration(float64(k.i) / k.rate * 1e9)) }

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

// sysmon, the runtime's monitor thread, parks whenever the one P is idle and the next syscall wakes it: at a
// few hundred requests a second that is extra thread wake-ups on every request (perf: twice the context
// switches and most futex calls). With schedtrace set it never parks and backs off to a wake-up per 10 ms;
// a trace every 11.6 days is at most one line on stderr. Set by re-executing before stdin is read.
const sysmonAwake = "schedtrace=1000000000"

func keepSysmonAwake() {
	old := os.Getenv("GODEBUG")
	if strings.Contains(old, "schedtrace=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return // runs as it is, sysmon parking
	}
	if old != "" {
		old += ","
	}
	env := []string{"GODEBUG=" + old + sysmonAwake}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GODEBUG=") {
			env = append(env, e)
		}
	}
	syscall.Exec(exe, os.Args, env) // returns only if it failed: then as it is
}

func main() {
	keepSysmonAwake()
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
	g := &gen{inFlight: map[string]int{}, busy: map[string]bool{}, quit: make(chan struct{}),
		addKinds: make(chan []*kind, 4)}
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
	g.hdr = http.Header{"Accept": {"application/json"}, "User-Agent": {"dragnet-load"}}
	if g.cfg.Auth != "" {
		g.hdr.Set("Authorization", g.cfg.Auth)
	}
	g.putHdr = g.hdr.Clone()
	g.putHdr.Set("Content-Type", "application/json")
	for _, p := range g.cfg.ReadPaths {
		u, err := url.Parse(g.cfg.URL + p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dragnet-loadgen: bad read path:", err)
			os.Exit(2)
		}
		g.reads = append(g.reads, u)
	}
	g.t0, g.mono0 = time.Now(), monoNow()
	until := g.at(g.mono0 + g.cfg.MaxSeconds)
	g.drivers.Add(1)
	go g.schedule(g.kinds(false, g.t0), until)
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
				g.mu.Lock()
				g.view = strings.TrimPrefix(c, "build ")
				for i, flag := range []string{"false", "true"} {
					g.viewURL[i], g.viewErr = url.Parse(g.cfg.URL + g.view + "&update=" + flag)
				}
				g.mu.Unlock()
				g.addKinds <- g.kinds(true, time.Now())
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

func (g *gen) kinds(views bool, start time.Time) []*kind {
	var ks []*kind
	for _, kr := range g.cfg.Rates {
		name, _ := kr[0].(string)
		rate, _ := kr[1].(float64)
		if rate <= 0 || viewKinds[name] != views || (views && g.view == "") {
			continue
		}
		ks = append(ks, &kind{name: name, rate: rate, start: start, work: make(chan time.Time)})
	}
	return ks
}

// schedule is the open loop of every kind in one goroutine: it sleeps until the next request is due, but
// wakes at most once per tick (tick_s) and then sends every request due by then, so a mix of kinds costs
// one wake-up per tick rather than one per request. A request sent late keeps its due time: its lateness
// (sent - due, at most a tick when the machine keeps up) is recorded and counted in its latency. A request
// due while max_in_flight of its kind wait already is not sent, and said so.
func (g *gen) schedule(ks []*kind, until time.Time) {
	defer g.drivers.Done()
	defer func() {
		for _, k := range ks {
			close(k.work)
		}
	}()
	tick := time.Duration(g.cfg.TickS * 1e9)
	timer := time.NewTimer(0)
	<-timer.C
	var last time.Time
	for {
		next := until
		for _, k := range ks {
			if d := k.due(); d.Before(next) {
				next = d
			}
		}
		wake := next
		if w := last.Add(tick); wake.Before(w) {
			wake = w
		}
		if d := time.Until(wake); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case add := <-g.addKinds:
				if !timer.Stop() {
					select { // drained whichever timer semantics the go.mod's version gives
					case <-timer.C:
					default:
					}
				}
				ks = append(ks, add...)
				continue
			case <-g.quit:
				return
			}
		}
		now := time.Now()
		last = now
		for _, k := range ks {
			for due := k.due(); !due.After(now) && due.Before(until); due = k.due() {
				k.i++
				g.dispatch(k, due)
			}
		}
		if !now.Before(until) {
			return
		}
	}
}

func (g *gen) dispatch(k *kind, due time.Time) {
	g.mu.Lock()
	if g.stopping {
		g.mu.Unlock()
		return
	}
	full := g.inFlight[k.name] >= g.cfg.MaxInFlight
	if !full {
		g.inFlight[k.name]++
	}
	g.mu.Unlock()
	if full {
		g.line("N\t" + k.name + "\t" + f(g.mono(due)))
		return
	}
	g.requests.Add(1)
	select {
	case k.work <- due: // an idle worker
	default:
		go g.worker(k, due)
	}
}

func (g *gen) worker(k *kind, due time.Time) {
	g.one(k.name, due)
	for due := range k.work {
		g.one(k.name, due)
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
		r = g.get(ctx, g.readURL())
	case "view-reads":
		r = g.getView(ctx, 0)
	default:
		r = g.getView(ctx, 1)
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
	b := make([]byte, 0, 128)
	b = append(append(append(b, "R\t"...), kind...), '\t')
	for _, t := range [3]time.Time{due, sent, end} {
		b = append(strconv.AppendFloat(b, g.mono(t), 'f', 6, 64), '\t')
	}
	b = append(strconv.AppendInt(b, int64(r.status), 10), '\t')
	b = append(append(append(append(b, r.stage...), '\t'), clean(r.err)...), '\t')
	b = append(append(append(b, r.id...), '\t'), r.rev...)
	g.mu.Lock()
	g.out.Write(b)
	g.out.WriteByte('\n')
	g.mu.Unlock()
}

var cleaner = strings.NewReplacer("\t", " ", "\n", " ")

func clean(s string) string {
	if s == "" {
		return s
	}
	return cleaner.Replace(s)
}

func (g *gen) readURL() *url.URL {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.reads) > 0 {
		return g.reads[g.rng.Intn(len(g.reads))]
	}
	path := g.cfg.DBPath + "/dragnet-load-none"
	if len(g.own) > 0 {
		path = g.cfg.DBPath + "/" + g.own[g.rng.Intn(len(g.own))]
	}
	u, _ := url.Parse(g.cfg.URL + path)
	return u
}

func (g *gen) getView(ctx context.Context, i int) result {
	if g.viewErr != nil {
		return result{err: g.viewErr.Error()}
	}
	return g.get(ctx, g.viewURL[i])
}

// do: one request on a URL parsed once and the headers built once (net/http only reads both).
func (g *gen) do(ctx context.Context, method string, u *url.URL, body []byte) (int, []byte, error) {
	if u == nil {
		return 0, nil, errors.New("bad URL")
	}
	req := &http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: g.hdr, Host: u.Host}
	if body != nil {
		req.Header = g.putHdr
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	resp, err := g.client.Do(req.WithContext(ctx))
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
	u, err := url.Parse(g.cfg.URL + path)
	if err != nil {
		return result{err: "bad URL"}, nil
	}
	return g.answerURL(ctx, method, u, body)
}

func (g *gen) answerURL(ctx context.Context, method string, u *url.URL, body []byte) (result, []byte) {
	status, data, err := g.do(ctx, method, u, body)
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

func (g *gen) get(ctx context.Context, u *url.URL) result {
	r, _ := g.answerURL(ctx, "GET", u, nil)
	return r
}
