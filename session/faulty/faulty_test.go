package faulty_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		give        faulty.Fault
		wantWritten []int64 // positions stored after appends 1, 2 and 3
		wantErrs    []bool
	}{
		{name: "before write on the 2nd", give: faulty.FailBefore(2), wantWritten: []int64{1, 3}, wantErrs: []bool{false, true, false}},
		{name: "after write on the 2nd", give: faulty.FailAfter(2), wantWritten: []int64{1, 2, 3}, wantErrs: []bool{false, true, false}},
		{name: "before write on every", give: faulty.FailBefore(0), wantWritten: nil, wantErrs: []bool{true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := faulty.New(memory.New(), tt.give)
			defer s.Close()
			var gotErrs []bool
			for seq := int64(1); seq <= 3; seq++ {
				err := s.Append(ctx, "s", "r", []state.Item{state.UserMessage("x").WithSeq(seq)})
				if err != nil {
					if ie, ok := errors.AsType[*faulty.InjectedError](err); !ok || !errors.Is(err, faulty.ErrInjected) || ie.Append != int(seq) {
						t.Fatalf("append %d: error %v is not the injected error", seq, err)
					}
				}
				gotErrs = append(gotErrs, err != nil)
			}
			items, err := s.List(ctx, "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, it := range items {
				got = append(got, it.Seq())
			}
			if d := cmp.Diff(tt.wantWritten, got); d != "" {
				t.Errorf("stored positions (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantErrs, gotErrs); d != "" {
				t.Errorf("failures (-want +got):\n%s", d)
			}
			if s.Appends() != 3 {
				t.Errorf("Appends() = %d, want 3", s.Appends())
			}
		})
	}
}

func TestSlowAppendUnderCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s := faulty.New(memory.New(), faulty.SlowAppend(1, time.Hour, cancel))
	defer s.Close()
	err := s.Append(ctx, "s", "r", []state.Item{state.UserMessage("x").WithSeq(1)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("slow append = %v, want context.Canceled", err)
	}
	if _, ok, _ := s.Lookup(context.Background(), "s", "r", 1); ok {
		t.Fatal("a cancelled slow append wrote its item")
	}
	if s.Fired() != 1 {
		t.Fatalf("Fired() = %d, want 1", s.Fired())
	}
}

// TestTargetedFaults aims faults at one run, position or item kind: Nth
// counts only the appends that match, and the error says where it fired
// (issue 13, item 10).
func TestTargetedFaults(t *testing.T) {
	t.Parallel()
	type appendCall struct {
		run   string
		items []state.Item
	}
	user := func(seq int64) state.Item { return state.UserMessage("u").WithSeq(seq) }
	msg := func(seq int64) state.Item { return state.AssistantMessage("m", "hi").WithSeq(seq) }
	calls := []appendCall{
		{"r1", []state.Item{user(1)}},         // 1
		{"r1", []state.Item{msg(2)}},          // 2
		{"r2", []state.Item{user(1)}},         // 3
		{"r2", []state.Item{user(2), msg(3)}}, // 4
		{"r1", []state.Item{msg(3)}},          // 5
		{"r2", []state.Item{msg(4)}},          // 6
	}
	tests := []struct {
		name string
		give faulty.Fault
		want []int // the appends that fail
	}{
		{name: "run", give: faulty.FailBefore(2).InRun("r2"), want: []int{4}},
		{name: "every append of a run", give: faulty.FailBefore(0).InRun("r1"), want: []int{1, 2, 5}},
		{name: "seq", give: faulty.FailBefore(0).AtSeq(3), want: []int{4, 5}},
		{name: "first with seq", give: faulty.FailBefore(1).AtSeq(3), want: []int{4}},
		{name: "kind", give: faulty.FailAfter(1).OfKind(state.KindAssistantMessage), want: []int{2}},
		{name: "kind in run", give: faulty.FailAfter(1).OfKind(state.KindAssistantMessage).InRun("r2"), want: []int{4}},
		{name: "kind and seq in run", give: faulty.FailBefore(0).OfKind(state.KindAssistantMessage).AtSeq(3).InRun("r1"), want: []int{5}},
		{name: "no match", give: faulty.FailBefore(0).InRun("r3"), want: nil},
		{name: "unfiltered counts all", give: faulty.FailBefore(3), want: []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := faulty.New(memory.New(), tt.give)
			defer s.Close()
			var failed []int
			for i, c := range calls {
				n := i + 1
				err := s.Append(context.Background(), "s", c.run, c.items)
				if err == nil {
					continue
				}
				failed = append(failed, n)
				ie, ok := errors.AsType[*faulty.InjectedError](err)
				if !ok {
					t.Fatalf("append %d: %v is not an *InjectedError", n, err)
				}
				want := faulty.InjectedError{Append: n, SessionID: "s", RunID: c.run, Seq: c.items[0].Seq(), Mode: tt.give.Mode, Written: tt.give.Mode == faulty.AfterWrite}
				if *ie != want {
					t.Errorf("append %d: error %+v, want %+v", n, *ie, want)
				}
			}
			if d := cmp.Diff(tt.want, failed); d != "" {
				t.Errorf("failed appends (-want +got):\n%s", d)
			}
			if s.Fired() != len(tt.want) {
				t.Errorf("Fired() = %d, want %d", s.Fired(), len(tt.want))
			}
		})
	}
}
