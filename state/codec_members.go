package state

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/turnkit/turnkit/state/internal/wire"
)

// The fast paths reach the members of the run object, a boundary and a
// usage through pointers listed here in the order of their structs'
// fields (the order of [runFields], [boundaryFields] and [usageFields]),
// not through reflection: a run object reflected on escaped to the heap
// on every Marshal, and reflecting on each member cost more than writing
// it. TestMembersListed checks the lists against the structs
// (checkMembers), so a field added to a struct and not to its list fails
// the package's tests rather than mixing members up.

// runMembers returns pointers to w's members, in field order.
func runMembers(w *wireRun) [22]any {
	return [...]any{
		&w.ID, &w.Agent, &w.Turn, &w.MaxTurns, &w.Version, &w.NextSeq,
		&w.Input, &w.Items, &w.Response, &w.Context, &w.ContextFrom,
		&w.Pending, &w.Decisions, &w.Guardrails, &w.Usage, &w.ModelCalls,
		&w.SessionID, &w.Watermark, &w.Trace, &w.Final, &w.Finished, &w.Extension,
	}
}

// members returns pointers to u's counters, in field order.
func (u *Usage) members() [6]*int64 {
	return [...]*int64{&u.Requests, &u.InputTokens, &u.OutputTokens, &u.ReasoningTokens, &u.CachedTokens, &u.CacheWriteTokens}
}

// members returns pointers to b's positions, in field order.
func (b *Boundary) members() [3]*int64 {
	return [...]*int64{&b.Start, &b.End, &b.OutputsEnd}
}

// checkAllMembers checks every members list against its struct, and
// that the decoders' switches (approvalMembers, modelCallMembers) have a
// case for every member.
func checkAllMembers() error {
	return errors.Join(
		checkMembers(runFields, func(w *wireRun) []any { m := runMembers(w); return m[:] }),
		checkMembers(usageFields, func(u *Usage) []any { m := u.members(); return anys(m[:]) }),
		checkMembers(boundaryFields, func(b *Boundary) []any { m := b.members(); return anys(m[:]) }),
		checkIDs(approvalFields, approvalMembers),
		checkIDs(modelCallFields, modelCallMembers),
	)
}

// checkIDs returns an error unless ids (see memberIDs) name every member
// of fs.
func checkIDs(fs *wire.Fields, ids []int) error {
	for i, id := range ids {
		if id < 0 {
			return fmt.Errorf("state: member %s has no case in its decoder", fs.List[i].GoName)
		}
	}
	return nil
}

// anys returns the pointers of a members list as values of type any.
func anys(m []*int64) []any {
	var out []any
	for _, p := range m {
		out = append(out, p)
	}
	return out
}

// checkMembers returns an error unless members lists, for each field of
// T in fs, a pointer to that field, in order.
func checkMembers[T any](fs *wire.Fields, members func(*T) []any) error {
	v := new(T)
	m := members(v)
	if len(m) != len(fs.List) {
		return fmt.Errorf("state: %T has %d members listed for %d fields", *v, len(m), len(fs.List))
	}
	for i, f := range fs.List {
		if reflect.ValueOf(v).Elem().Field(f.Index).Addr().Interface() != m[i] {
			return fmt.Errorf("state: member %d of %T listed is not its field %s", i, *v, f.GoName)
		}
	}
	return nil
}
