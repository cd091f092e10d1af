package encrypt_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/state"
)

// FuzzOpenItem hands the item codec's OpenItem any stored bytes, seeded
// with an item sealed in the binary form (SealItem's) and in the JSON
// form (the wrappers'): it must return the sealed item itself or a
// [*encrypt.SealError], never another item, never panic. A seed opens to
// its item, and a binary seed with any one byte changed does not.
func FuzzOpenItem(f *testing.F) {
	ctx := context.Background()
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("k"), encrypt.WithKeyStore(encrypt.MemoryKeys()))
	if err := encrypt.LoadKey(ctx, kr, "session-1"); err != nil {
		f.Fatal(err)
	}
	item := state.ToolCall("fc_1", "call_1", "lookup", `{"q":"the weather in Paris"}`).WithSeq(7)
	sealed, err := kr.SealItem(ctx, nil, "session-1", "r1", item)
	if err != nil {
		f.Fatal(err)
	}
	asJSON, err := encrypt.SealItems(ctx, kr, "session-1", "r1", []state.Item{item})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, "")
	f.Add(sealed, "r1")
	f.Add(asJSON[0].AppendRaw(nil), "")
	f.Add(append(sealed[:1:1], 0xff), "")
	f.Add([]byte(`{"type":"function_call"}`), "")
	f.Add([]byte(`{"turnkit_run":"r1","turnkit_sealed":"}`), "") // the member's quote is the suffix's
	f.Fuzz(func(t *testing.T, stored []byte, runID string) {
		got, err := kr.OpenItem(ctx, "session-1", runID, item.Kind(), item.Seq(), item.Name(), stored)
		if err != nil {
			if se := (*encrypt.SealError)(nil); !errors.As(err, &se) {
				t.Fatalf("OpenItem(%q) = %v, want a *SealError", stored, err)
			}
			return
		}
		if !got.Equal(item) {
			t.Fatalf("OpenItem(%q) = %s, an item never sealed", stored, got)
		}
		if runID != "" && runID != "r1" {
			t.Fatalf("OpenItem(%q) in run %q opened an item of run r1", stored, runID)
		}
		if len(stored) == len(sealed) && stored[0] == sealed[0] && !bytes.Equal(stored, sealed) {
			t.Fatalf("OpenItem opened %q, the binary form edited", stored)
		}
	})
}
