package jobs

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestQueuedRecordIsTheMarshalledRun: the hand-built record of a new job
// decodes to the same Run as json.Marshal's.
func TestQueuedRecordIsTheMarshalledRun(t *testing.T) {
	r := Run{Spec: Spec{ID: "b.000001", Command: "echo 'x' \"y\"", Env: map[string]string{"A": "1"}, Labels: map[string]string{LabelBatch: "b"}},
		State: StateQueued, UpdatedAt: time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC)}
	spec, err := json.Marshal(r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var got, want Run
	if err := json.Unmarshal(queuedRecord(spec, r), &got); err != nil {
		t.Fatal(err)
	}
	full, _ := json.Marshal(r)
	if err := json.Unmarshal(full, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	r.Attempt = 1
	if queuedRecord(spec, r) != nil {
		t.Fatal("a record with an attempt was hand-built")
	}
}
