package persistence

import (
	"context"
	"errors"
	"testing"
	"unsafe"
)

type parentKey struct{}

// The context a turn is served with carries its ledger and everything of
// the context it was made from: values, cancellation, and contexts made
// from it are cancelled with it.
func TestLedgerContext(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), parentKey{}, "v"))
	l := &ledger{}
	ctx := l.withLedger(parent)
	if got, _ := ctx.Value(ledgerKey{}).(*ledger); got != l {
		t.Errorf("Value(ledgerKey{}) = %p, want the ledger %p", got, l)
	}
	if got := ctx.Value(parentKey{}); got != "v" {
		t.Errorf("Value(parentKey{}) = %v, want the parent's value v", got)
	}
	inner, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-ctx.Done()
	<-inner.Done()
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(inner.Err(), context.Canceled) {
		t.Errorf("after the parent's cancel: Err = %v, inner Err = %v, want context.Canceled", ctx.Err(), inner.Err())
	}
}

// A run allocates one ledger (a turn composed without the run stage, one
// of its own): it must stay within the 384-byte size class (the next is
// 416), where its fields and the room it keeps for a turn of one call fit.
func TestLedgerSize(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(ledger{}); n > 384 {
		t.Errorf("a ledger is %d bytes, want at most 384 (one allocation per run)", n)
	}
}
