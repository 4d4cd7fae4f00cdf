// goqs: a CouchDB query server in Go, written for dragnet's tests of servers it does not ship.
//
// Its "language" is precompiled: a map or reduce function's source is the name of a Go function built
// into this binary (a comment line starting with // may come first), e.g. "income" for views/income.
// A name it does not know answers ["error", "compilation_error", ...], as CouchDB expects of a function
// that does not compile. It speaks reset, add_lib, add_fun, map_doc, reduce and rereduce; ddoc and
// other commands answer an error. Numbers are float64, as in CouchDB's JavaScript.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

type doc = map[string]any
type row = [2]any
type mapFun func(d doc, log func(string)) ([]row, error)
type reduceFun func(keys []any, values []any, rereduce bool) (any, error)

var maps = map[string]mapFun{
	"income":     income,
	"emit_v":     func(d doc, _ func(string)) ([]row, error) { return []row{{d["_id"], d["v"]}}, nil },
	"emit_const": func(d doc, _ func(string)) ([]row, error) { return []row{{"const", 1}}, nil },
	"emit_three": func(d doc, _ func(string)) ([]row, error) {
		return []row{{d["_id"], 1}, {d["_id"], 2}, {[]any{d["_id"], 3}, nil}}, nil
	},
	"nothing": func(d doc, _ func(string)) ([]row, error) { return nil, nil },
	"log": func(d doc, log func(string)) ([]row, error) {
		log("saw " + jsString(d["_id"]))
		return []row{{d["_id"], nil}}, nil
	},
	"throw_if_bad": func(d doc, _ func(string)) ([]row, error) {
		if truthy(d["bad"]) {
			return nil, fmt.Errorf("bad doc %s", jsString(d["_id"]))
		}
		return []row{{d["_id"], 1}}, nil
	},
	"emit_text": func(d doc, _ func(string)) ([]row, error) { return []row{{d["text"], []any{d["text"]}}}, nil },
	"emit_blob_len": func(d doc, _ func(string)) ([]row, error) {
		s, _ := d["blob"].(string)
		return []row{{d["_id"], len(s)}}, nil
	},
}

var reduces = map[string]reduceFun{
	"sum": func(_ []any, values []any, _ bool) (any, error) { return sum(values), nil },
	"count": func(_ []any, values []any, rereduce bool) (any, error) {
		if rereduce {
			return sum(values), nil
		}
		return len(values), nil
	},
	"throw": func(_ []any, _ []any, _ bool) (any, error) { return nil, fmt.Errorf("reduce failed") },
}

// income: views/income/map.js in Go. JavaScript's semantics where they show in the rows: a missing
// field is left out of the value, and "+" on a missing name field gives "undefined".
func income(d doc, _ func(string)) ([]row, error) {
	s0, ok := d["step_0"].(map[string]any)
	if !ok || s0["declarationType"] != "1" {
		return nil, nil
	}
	if _, changes := s0["changesYear"]; changes {
		return nil, nil
	}
	s1, _ := d["step_1"].(map[string]any)
	var declSalary, declTotal, famSalary, famTotal float64
	for _, item := range objectValues(d["step_11"]) {
		it, ok := item.(map[string]any)
		if !ok {
			continue // (an array item would add 0 to the family's totals in JavaScript: the same rows)
		}
		size, _ := it["sizeIncome"].(float64)
		salary := it["objectType"] == "salarymain"
		if it["person"] == "1" {
			declTotal += size
			if salary {
				declSalary += size
			}
		} else {
			famTotal += size
			if salary {
				famSalary += size
			}
		}
	}
	value := map[string]any{
		"FIO":              jsString(s1["lastname"]) + " " + jsString(s1["firstname"]) + " " + jsString(s1["middlename"]),
		"declarant_salary": declSalary, "declarant_total": declTotal,
		"family_salary": famSalary, "family_total": famTotal,
	}
	for _, k := range []string{"workPost", "workPlace"} {
		if v, ok := s1[k]; ok {
			value[k] = v
		}
	}
	if v, ok := s0["declarationYear1"]; ok {
		value["decl_year"] = v
	}
	return []row{{d["_id"], value}}, nil
}

func objectValues(v any) []any {
	switch o := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(o))
		for _, x := range o {
			out = append(out, x)
		}
		return out
	case []any:
		return o
	}
	return nil
}

func jsString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case map[string]any:
		return "[object Object]"
	}
	return fmt.Sprint(v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	}
	return true
}

func sum(values []any) float64 {
	t := 0.0
	for _, v := range values {
		if f, ok := v.(float64); ok {
			t += f
		}
	}
	return t
}

// a function's source: its name, after optional // comment lines
func funName(src string) string {
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "//") {
			return line
		}
	}
	return ""
}

type server struct {
	out        *bufio.Writer
	funs       []mapFun
	mapped     int
	crashAfter int // --crash-after N: exit with a line on stderr after N documents (a server that crashes mid-build)
}

func (s *server) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal([]any{"error", "encode_error", err.Error()})
	}
	s.out.Write(b)
	s.out.WriteByte('\n')
}

func (s *server) handle(cmd []any) {
	name, _ := cmd[0].(string)
	switch name {
	case "reset":
		s.funs = nil
		s.send(true)
	case "add_lib":
		s.send(true)
	case "add_fun":
		src, _ := cmd[1].(string)
		f, ok := maps[funName(src)]
		if !ok {
			s.send([]any{"error", "compilation_error", "goqs has no function " + strconv.Quote(funName(src)) + ": " + src})
			return
		}
		s.funs = append(s.funs, f)
		s.send(true)
	case "map_doc":
		s.mapped++
		if s.crashAfter > 0 && s.mapped > s.crashAfter {
			fmt.Fprintf(os.Stderr, "boom after %d docs\n", s.crashAfter)
			os.Exit(3)
		}
		d, _ := cmd[1].(map[string]any)
		out := make([][]row, len(s.funs))
		for i, f := range s.funs {
			rows, err := f(d, func(msg string) { s.send([]any{"log", msg}) })
			if err != nil {
				s.send([]any{"log", fmt.Sprintf("function raised exception (%s) with doc._id %s", err, jsString(d["_id"]))})
				rows = nil
			}
			if rows == nil {
				rows = []row{}
			}
			out[i] = rows
		}
		s.send(out)
	case "reduce", "rereduce":
		srcs, _ := cmd[1].([]any)
		items, _ := cmd[2].([]any)
		var keys, values []any
		if name == "reduce" {
			for _, kv := range items {
				pair, _ := kv.([]any)
				if len(pair) == 2 {
					keys, values = append(keys, pair[0]), append(values, pair[1])
				}
			}
		} else {
			values = items
		}
		results := make([]any, len(srcs))
		for i, src := range srcs {
			text, _ := src.(string)
			f, ok := reduces[funName(text)]
			if !ok {
				s.send([]any{"error", "compilation_error", "goqs has no reduce function " + strconv.Quote(funName(text))})
				return
			}
			r, err := f(keys, values, name == "rereduce")
			if err != nil {
				s.send([]any{"log", "reduce function raised exception: " + err.Error()})
				r = nil
			}
			results[i] = r
		}
		s.send([]any{true, results})
	case "list_row", "list_end":
		// no list is running: CouchDB and this process disagree, so answer and exit as couchjs does
		s.send([]any{"error", "unknown_command", "unknown command " + strconv.Quote(name)})
		s.out.Flush()
		os.Exit(1)
	default:
		s.send([]any{"error", "unknown_command", "goqs does not know " + strconv.Quote(name)})
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("goqs 0.1 (dragnet's test server)")
		return
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	s := &server{out: bufio.NewWriterSize(os.Stdout, 1<<16)}
	if len(os.Args) > 2 && os.Args[1] == "--crash-after" {
		s.crashAfter, _ = strconv.Atoi(os.Args[2])
	}
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var cmd []any
			if jerr := json.Unmarshal(line, &cmd); jerr != nil || len(cmd) == 0 {
				s.send([]any{"error", "query_protocol_error", "not a command"})
			} else {
				s.handle(cmd)
			}
			s.out.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goqs:", err)
			os.Exit(2)
		}
	}
}
