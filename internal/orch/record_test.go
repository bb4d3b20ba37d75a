package orch

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fill sets every field of the struct v points to (and of the structs it
// points to) to a value that is not the zero one, so that a field the
// conversions leave out shows.
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeOf(&time.Time{}) {
			at := time.Date(2026, 12, 1, 10, 0, *n, 0, time.UTC)
			v.Set(reflect.ValueOf(&at))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 10, 0, *n, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i), n)
		}
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, n)
		fill(t, e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		t.Fatalf("fill: a field of kind %s", v.Kind())
	}
}

// TestRecordsAndTheWireAgree: run.json's records and the API's types are
// apart (record.go), and meet only in wire and workerRecord. Every field
// of a record shows in the JSON of its wire form under the same key, and
// a worker that another machine showed comes back as the same record.
func TestRecordsAndTheWireAgree(t *testing.T) {
	var r Run
	n := 0
	fill(t, reflect.ValueOf(&r).Elem(), &n)
	rec, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	wr := r.wire()
	wire, err := json.Marshal(wr)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	json.Unmarshal(rec, &a)
	json.Unmarshal(wire, &b)
	// A worker's ledger (the record files read for its tokens, and how
	// far) and its agent's own cost (statusline.go) are the daemon's own
	// bookkeeping: its tokens show them, not they.
	for _, w := range a["workers"].([]any) {
		delete(w.(map[string]any), "ledger")
		delete(w.(map[string]any), "agent_cost_usd")
	}
	delete(a, "coordinator_ledger") // (the coordinator's, likewise, and
	delete(a, "coordinator_base")   // what it spent before its run)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("run.json's record and the API's run differ:\nrecord %s\nwire   %s", rec, wire)
	}
	w := r.Workers[0]
	w.Ledger, w.AgentCost = nil, nil
	if back := workerRecord(w.wire()); !reflect.DeepEqual(back, w) {
		t.Errorf("a worker through the wire and back: %+v, was %+v", back, w)
	}
}
