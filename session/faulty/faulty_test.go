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
