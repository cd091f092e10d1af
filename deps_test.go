package turnkit_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// This test is a statement of policy, like go/build's deps_test.go: it
// writes down the dependency direction of docs/design.md and fails on a
// forbidden edge. Do not edit it to make a build pass; change the code instead.

const module = "github.com/turnkit/turnkit"

// allowed lists, per package pattern, the turnkit packages it may import
// (its non-test imports). A pattern ending in "/..." matches the folder and
// everything below it. The first matching rule wins.
var allowed = []struct {
	pkg     string
	imports []string
}{
	{"internal/jsonw", nil},                                 // JSON writing shared by state and the model adapters
	{"internal/jsonscan", []string{"internal/jsonw"}},       // the JSON scanner of the fast paths beside encoding/json (state, model/...); skips strings' plain runs as jsonw writes them (PlainLen)
	{"internal/prefixed", nil},                              // length-prefixed fields of the binary rows and sealed heads (state, session/...)
	{"internal/testenv", nil},                               // CI plumbing of turnkit's own tests
	{"internal/mutate", nil},                                // the mutation test (go run ./internal/mutate), a command
	{"internal/conversation", nil},                          // tests only: a long conversation on every backend
	{"internal/childproc", nil},                             // the worker processes of the multi-process harnesses
	{"internal/crossbackend", nil},                          // tests across the real backends, out of the user-facing packages' tests
	{"internal/crossbackend/...", nil},                      // the same, by package: session/encrypt's and session/branch's
	{"internal/providerfake", nil},                          // tests only: recorded provider payloads over httptest, no SDK
	{"internal/key", nil},                                   // the key that opens the guarded doors: state.Core to runcore, pipeline.Core to pipelinetest
	{"internal/runcore", []string{"state", "internal/key"}}, // the guarded operations on a run; importers listed in closed
	{"state", []string{"internal/jsonw", "internal/jsonscan", "internal/key", "internal/prefixed"}},
	{"state/internal/wire", []string{"internal/jsonscan"}},   // the checkpoint format: state's own, below it
	{"state/internal/sign", []string{"state/internal/wire"}}, // the checkpoint's signature: state's own, below it

	{"state/statetest", []string{"state", "internal/runcore"}}, // builds runs by hand, as the core would
	{"state/storage", []string{"state", "internal/runcore"}},   // the protocol for stores written outside turnkit: it, not their backend, records a save (runcore.Saved)
	{"state/memstore", []string{"state", "state/storage"}},     // a storage backend, as a store written outside turnkit is
	{"state/filestore", []string{"state", "state/storage"}},
	{"state/...", []string{"state", "internal/jsonw"}},
	{"pipeline", []string{"state", "internal/runcore", "internal/key"}},                          // internal/key: pipeline.Core, the core's own turn building for pipelinetest
	{"pipeline/pipelinetest", []string{"pipeline", "internal/key", "state", "internal/runcore"}}, // opens pipeline.Core
	{"pipeline/...", []string{"pipeline", "state", "model/scripted"}},
	{"session", []string{"state"}},
	{"session/sessiontest", []string{"session", "state"}},
	{"session/internal/ckpttest", []string{"session", "state", "state/statetest", "internal/runcore"}},             // test helpers of the stores
	{"session/...", []string{"session", "session/internal/...", "state", "internal/runcore", "internal/prefixed"}}, // runcore: the checkpoint stores' and branch's Saved, SetVersion
	{"middleware/persistence", []string{"pipeline", "state", "session", "internal/runcore"}},                       // runcore: the run's session, watermark and history
	{"middleware/persistence/internal/faultsuite", []string{"middleware/persistence", "model/scripted", "pipeline", "pipeline/pipelinetest", "session", "session/faulty", "state"}}, // the fault suite any session.Store runs through persistence
	{"middleware/checkpoint", []string{"pipeline", "state", "session", "middleware/persistence", "internal/runcore"}},                                                               // wires persistence through its write-ahead (WithSession)
	{"middleware/...", []string{"pipeline", "state"}},
	{"riverrun", []string{"pipeline", "state", "session", "middleware/checkpoint", "middleware/persistence"}}, // runs as River jobs, in a module of its own; River stays here
	{"model/internal/adapt", []string{"state"}},                                                               // what the adapters share in translating failures
	{"model/...", []string{"pipeline", "state", "internal/jsonw", "internal/jsonscan", "model/internal/..."}},
	{"tracing/...", []string{"pipeline", "state", "tracing/internal/..."}},
	{"tool/mcp", []string{"pipeline", "state"}}, // MCP servers' tools; the go-sdk stays here
	{"tool/internal/jsonschema", nil},           // reflects Go types into the schemas tool sends
	{"tool/...", []string{"pipeline", "state", "tool/internal/..."}},
	{"inspect", []string{"session", "state"}}, // the inspector: any store, through the interfaces
	{"inspect/browsertest", nil},              // its browser test, a module of its own (chromedp)
	{"cmd/...", []string{"..."}},              // commands wire the backends together
	{"examples/...", []string{"..."}},
	{"bench/...", []string{"..."}},
	{"internal/torture/...", []string{"..."}}, // the reliability harness drives real backends
}

// heavy lists third-party modules that only the named packages (and
// examples, benchmarks) may pull in, directly or transitively.
var heavy = map[string][]string{
	"github.com/jackc/pgx":                   {"session/postgres"},
	"github.com/redis/go-redis":              {"session/redis"},
	"modernc.org/sqlite":                     {"session/sqlite"},
	"github.com/openai/openai-go":            {"model/openai"},
	"github.com/anthropics/anthropic-sdk-go": {"model/anthropic"},
	"google.golang.org/genai":                {"model/gemini"},
	"go.uber.org/zap":                        {"middleware/logging"},
	"go.opentelemetry.io/otel/sdk":           {},
	"go.opentelemetry.io/otel/exporters":     {},
	"github.com/invopop/jsonschema":          {"model/anthropic"}, // the Anthropic SDK's root package imports it; tool reflects its own
	"github.com/modelcontextprotocol/go-sdk": {"tool/mcp"},
	"github.com/google/jsonschema-go":        {"tool/mcp"},
	"gonum.org/v1/plot":                      {},
	"github.com/riverqueue/river":            {"riverrun"},
}

// closed lists turnkit packages that only the named packages may import,
// whatever the rules above allow: the guarded operations on a run are the
// core's, the stores' (its version, its saves), persistence's and
// checkpoint's (its session, watermark and history), and their test kits'
// and harnesses', not another middleware's or an example's.
var closed = map[string][]string{
	"internal/key": {"state", "internal/runcore", "pipeline", "pipeline/pipelinetest"}, // state and pipeline name the key in their Core's signature; runcore and pipelinetest make one
	"internal/runcore": {
		"pipeline", "pipeline/pipelinetest", "state/statetest", "session/internal/ckpttest", // the core and its test kits
		"state/storage", "session/internal/rowcodec", "session/sqlite", "session/postgres", "session/redis", "session/branch", // the stores
		"middleware/persistence", "middleware/checkpoint", // the run's session bookkeeping
		"internal/torture", "bench/internal/scenario", // harnesses that build runs by hand
	},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func TestDependencyDirection(t *testing.T) {
	// Every module of the workspace (go.work): the library, riverrun, bench
	// and examples; ./... alone would stop at the nested modules.
	mods, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}/...").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	args := append([]string{"list", "-json=ImportPath,Imports,Deps"}, strings.Fields(string(mods))...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		n++
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if rel == "" {
			continue
		}
		rule := -1
		for i, r := range allowed {
			if match(r.pkg, rel) {
				rule = i
				break
			}
		}
		if rule < 0 {
			t.Errorf("%s: no dependency rule covers this package; add one to deps_test.go", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if owners, ok := closed[dep]; ok && !slices.Contains(owners, rel) {
				t.Errorf("%s imports %s: only %v may", rel, dep, owners)
			}
			if dep == rel || strings.HasPrefix(dep, rel+"/internal") {
				continue
			}
			if !slices.ContainsFunc(allowed[rule].imports, func(pat string) bool { return match(pat, dep) }) {
				t.Errorf("%s imports %s: forbidden by the dependency direction in docs/design.md", rel, dep)
			}
		}
		// Programs, not imported: they wire backends together (cmd/turnkit
		// opens any of the three stores).
		if match("examples/...", rel) || match("bench/...", rel) || match("internal/torture/...", rel) || match("cmd/...", rel) {
			continue
		}
		for _, dep := range p.Deps {
			for mod, owners := range heavy {
				if !strings.HasPrefix(dep, mod) {
					continue
				}
				if !slices.ContainsFunc(owners, func(o string) bool { return rel == o || strings.HasPrefix(rel, o+"/") }) {
					t.Errorf("%s depends on %s: only %v may pull it in", rel, dep, owners)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list returned %d packages; the policy checked nothing", n)
	}
}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}
